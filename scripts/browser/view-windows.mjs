// Issue 39's random-window check on the canvas: the viewer loaded at each of a list of windows (the
// window in the address, `#view=S,E`, as a link opens it), at a given canvas width, with its
// drawing recorded (`?drawlog`: draw.js keeps what each track's last redraw drew). For each window
// it gives the view the page shows and, per thread and async track, every slice item it drew at
// least half a pixel wide (narrower ones cannot be a slice a pixel wide), with its label, and the
// runs it drew; the Rust test (crates/phosphor-cli/tests/it/view_windows.rs) checks them against
// the trace's own slices.
//
// Usage: node view-windows.mjs URL PARAMS.json TIMEOUT_SECONDS
//   PARAMS: {"width": CANVAS_CSS_PX, "windows": [[S, E], ...]} (ns from the traces' start)
// Prints {"errors": [...], "windows": [{view, origin, width, tracks: [...]}]}.
import { readFileSync } from 'node:fs'
import { check, seeAll, waitIdle } from './page.mjs'

const [url, paramsPath, timeoutS] = process.argv.slice(2)
const params = JSON.parse(readFileSync(paramsPath, 'utf8'))
const timeout = 1000 * Number(timeoutS || 120)
const result = { errors: [], windows: [] }

// The page is the canvases, the track labels (200 px) and the side panel (440 px) wide; the
// canvases' actual width is read back and given with each window.
const viewport = { width: params.width + 640, height: 900 }

await check(result, timeout, async page => {
  for (const [k, [s, e]] of params.windows.entries()) {
    // A new address each time (`n`), so that the page loads afresh at the window.
    await page.goto(`${url}?drawlog=1&n=${k}#view=${s},${e}`, { timeout, waitUntil: 'domcontentloaded' })
    await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
    await waitIdle(page, timeout)
    // Tracks out of sight are drawn as they scroll in.
    await seeAll(page, timeout)
    // Every slice track drawn from an answer for this view.
    await page.waitForFunction(() => window.phosphorView.tracks
      .filter(t => t.kind === 'thread' || t.kind === 'async')
      .every(t => t.data && t.drawLog && t.window && t.window.start <= window.phosphorView.view.start && t.window.end >= window.phosphorView.view.end),
    { timeout, polling: 50 })
    result.windows.push(await page.evaluate(() => {
      const v = window.phosphorView
      const tracks = v.tracks.filter(t => t.kind === 'thread' || t.kind === 'async')
      const width = tracks.length ? tracks[0].canvas.cssWidth : 0
      const px = (v.view.end - v.view.start) / width
      // The narrowest label of a name: its first letter and an ellipsis, in the labels' font.
      const g = document.createElement('canvas').getContext('2d')
      g.font = '11px system-ui, sans-serif'
      const narrowest = new Map()
      const minLabel = name => {
        if (!narrowest.has(name)) narrowest.set(name, g.measureText(name.slice(0, 1) + '…').width)
        return narrowest.get(name)
      }
      return {
        view: [v.view.start, v.view.end],
        origin: v.span.start,
        width,
        tracks: tracks.map(t => {
          const log = t.drawLog || []
          return {
            kind: t.kind,
            tid: t.kind === 'thread' ? t.tid : null,
            async: t.kind === 'async' ? t.async : null,
            width: t.canvas.cssWidth,
            // [level, start, end, name, x0, x1, label, width of the narrowest label of the name]
            slices: log.filter(d => d[0] === 'slice' && (d[3] - d[2]) >= 0.5 * px)
              .map(d => [d[1], d[2], d[3], d[4], d[6], d[7], d[8], minLabel(d[4])]),
            runs: log.filter(d => d[0] === 'run').length,
            // The labelled runs (at most 50): [level, start, end, name, count, label].
            run_labels: log.filter(d => d[0] === 'run' && d[8]).slice(0, 50).map(d => [d[1], d[2], d[3], d[4], d[9], d[8]]),
          }
        }),
      }
    }))
  }
}, viewport.width, viewport.height)
