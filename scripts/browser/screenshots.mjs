// The README's screenshots of the viewer (scripts/screenshots.sh runs it), taken in headless
// Chromium at 1600 × 900 from a running `phosphor view` or `phosphor record --view`.
//
// Usage: node screenshots.mjs URL OUTDIR SHOT...
// SHOT: `first` (the first complete view), `zoom:NAME` (a slice named NAME near the middle of
// the trace, selected, in a 3 µs window), `flame` (the flame graph of everything), `live` (a
// live recording, once its tracks are drawn).
import { check, recordTexts, waitIdle } from './page.mjs'

const [url, out, ...shots] = process.argv.slice(2)
if (!url || !out || !shots.length) {
  console.error('usage: node screenshots.mjs URL OUTDIR SHOT...')
  process.exit(2)
}
const timeout = 180000
const result = { errors: [], shots: [] }

async function save(page, name) {
  const path = `${out}/${name}.png`
  await page.screenshot({ path })
  result.shots.push(path)
}

await check(result, timeout, async page => {
  await page.evaluateOnNewDocument(recordTexts)
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  for (const shot of shots) {
    if (shot === 'live') {
      // Tracks drawn with slices in them.
      await page.waitForFunction(() => {
        const v = window.phosphorView
        return v && v.tracks.some(t => t.kind === 'thread' && (t.canvas.texts || []).length > 3)
      }, { timeout, polling: 100 })
      await save(page, 'view-live-recording')
      continue
    }
    await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
    await waitIdle(page, timeout)
    if (shot === 'first') {
      await save(page, 'view-first')
    } else if (shot.startsWith('zoom:')) {
      const name = shot.slice(5)
      const hit = await page.evaluate(async name => {
        const v = window.phosphorView
        const mid = Math.round((v.span.start + v.span.end) / 2)
        const r = await (await fetch(`/api/search?q=${encodeURIComponent(name)}&after=${mid}&limit=50`)).json()
        return r.hits.find(h => h.kind === 'slice' && h.async === null && h.end_ns - h.start_ns < 2000)
      }, name)
      if (!hit) throw new Error(`no slice named ${name} shorter than 2 µs after the middle`)
      const mid = (hit.start_ns + hit.end_ns) / 2
      await page.evaluate((s, e) => window.phosphorView.show(s, e), mid - 1500, mid + 1500)
      await waitIdle(page, timeout)
      // Select it: a click where it is drawn.
      const point = await page.evaluate(h => {
        const v = window.phosphorView
        const track = v.tracks.find(k => k.kind === 'thread' && k.tid === h.tid && k.trace === h.trace) ||
          v.tracks.find(k => k.kind === 'thread' && k.tid === h.tid)
        track.canvas.scrollIntoView({ block: 'center' })
        const r = track.canvas.getBoundingClientRect()
        const mid = (h.start_ns + h.end_ns) / 2
        return { x: r.left + (mid - v.view.start) / (v.view.end - v.view.start) * r.width, y: r.top + h.level * 18 + 9 }
      }, hit)
      await page.mouse.click(point.x, point.y)
      await page.waitForFunction(() => document.querySelector('#details h3'), { timeout, polling: 50 })
      await waitIdle(page, timeout)
      await save(page, 'view-zoom-3us')
    } else if (shot === 'flame') {
      await page.keyboard.press('Escape')
      await page.keyboard.press('0')
      await waitIdle(page, timeout)
      await page.click('#flame-button')
      await page.waitForFunction(() => document.querySelector('#flame'), { timeout, polling: 50 })
      await waitIdle(page, timeout)
      // Zoomed into `iteration` (its frames labelled), one of them hovered (the tooltip).
      const at = label => page.evaluate(label => {
        const c = document.querySelector('#flame')
        const r = c.getBoundingClientRect()
        const t = (c.texts || []).find(x => x.text === label || x.text.startsWith(`${label} (`))
        return t && { x: r.left + t.x + 2, y: r.top + t.y }
      }, label)
      const it = await at('iteration')
      if (it) {
        await page.mouse.click(it.x, it.y)
        await waitIdle(page, timeout)
        // Hover the first labelled frame of the deepest row (its tooltip: total, self, count).
        const deep = await page.evaluate(() => {
          const c = document.querySelector('#flame')
          const r = c.getBoundingClientRect()
          const texts = c.texts || []
          const y = Math.max(...texts.map(t => t.y))
          const t = texts.find(x => x.y === y)
          return t && { x: r.left + t.x + 2, y: r.top + t.y }
        })
        if (deep) await page.mouse.move(deep.x, deep.y)
      }
      await save(page, 'view-flame')
    } else {
      throw new Error(`unknown shot ${shot}`)
    }
  }
})
