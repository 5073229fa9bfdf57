// Drives the page of a running `phosphor view` of `phosphor_craft::system`'s trace (thread 101:
// blocked from 10 to 60 ms; CPU samples at 5, 70, 75 and 92 ms; `work` from 0 to 100 ms) in
// headless Chromium, and prints what it shows of the system context as one JSON object:
//   {"band": {"blocked": N, "samples": N, "at35": [r, g, b, a], "at85": [...]},
//    "tip": "...", "details": {"on CPU": "...", ...}, "labels": [...], "group": "...", "errors": [...]}
//
// Usage: node view-system-check.mjs URL SCREENSHOT [TIMEOUT_SECONDS]
import { check, clickSlice, waitIdle } from './page.mjs'

const [url, screenshot, timeoutArg] = process.argv.slice(2)
if (!url || !screenshot) {
  console.error('usage: node view-system-check.mjs URL SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const timeout = 1000 * Number(timeoutArg || 120)
const TID = 101
const MS = 1e6
const result = { band: null, tip: null, details: null, labels: [], errors: [] }

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
  await waitIdle(page, timeout)
  result.labels = await page.$$eval('.track .label', ls => ls.map(l => l.textContent))
  result.group = await page.$eval('#tracks .group', g => g.textContent)
  result.drawn = await page.evaluate(() => window.phosphorView.tracks.map(t => ({ name: t.name, kind: t.kind, drawn: t.drawn })))

  // The band of thread 101: its counts, and the colour drawn in the middle of its row at 35 ms
  // (blocked) and at 85 ms (on the CPU, no sample).
  result.band = await page.evaluate((tid, ms) => {
    const v = window.phosphorView
    const track = v.tracks.find(k => k.kind === 'thread' && k.tid === tid)
    const c = track.canvas
    const origin = v.span.start
    const x = t => Math.round((origin + t - v.view.start) / (v.view.end - v.view.start) * c.width)
    const y = track.height - 6
    const pixel = t => Array.from(c.getContext('2d').getImageData(x(t), y, 1, 1).data)
    return { blocked: Number(c.dataset.blocked), samples: Number(c.dataset.samples), at35: pixel(35 * ms), at85: pixel(85 * ms) }
  }, TID, MS)

  // Hover the sample at 70 ms: the tooltip shows its stack, symbolized.
  const at = await page.evaluate((tid, t) => {
    const v = window.phosphorView
    const track = v.tracks.find(k => k.kind === 'thread' && k.tid === tid)
    track.canvas.scrollIntoView({ block: 'center' })
    const r = track.canvas.getBoundingClientRect()
    return { x: r.left + (v.span.start + t - v.view.start) / (v.view.end - v.view.start) * r.width, y: r.top + track.height - 6 }
  }, TID, 70 * MS)
  await page.mouse.move(at.x, at.y)
  await page.waitForFunction(() => {
    const tip = document.querySelector('#sys-tip')
    return tip && !tip.hidden && tip.dataset.kind === 'sample'
  }, { timeout, polling: 50 })
  result.tip = await page.$eval('#sys-tip', t => t.textContent)
  await page.screenshot({ path: screenshot })

  // Click `work` (level 0, 0 to 100 ms): its details have its system rows.
  const origin = await page.evaluate(() => window.phosphorView.span.start)
  await clickSlice(page, { tid: TID, level: 0, start: origin, end: origin + 100 * MS })
  await page.waitForFunction(() => document.querySelector('#details').dataset.durationNs !== undefined, { timeout, polling: 50 })
  result.details = await page.evaluate(() => {
    const rows = {}
    for (const dt of document.querySelectorAll('#details dt')) rows[dt.textContent] = dt.nextElementSibling.textContent
    return rows
  })
})
