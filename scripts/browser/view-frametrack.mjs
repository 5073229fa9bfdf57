// The frame track of a running `phosphor view` in headless Chromium: reads the rows the page drew,
// hovers frame NUMBER of set SET and reads the tooltip, clicks it and reports the window shown, as
// one JSON object:
//   {"rows": [{"name", "count", "frames": [[start, dur, number] | [start, end, -count, first, longest]]}],
//    "tip": "frame 7: 512 µs (slow)", "view": [start, end], "zoomed": [entries after the click], "errors": [...]}
//
// Usage: node view-frametrack.mjs URL SET NUMBER SCREENSHOT [TIMEOUT_SECONDS]
// Chromium: $CHROMIUM, else /usr/bin/chromium.
import { check } from './page.mjs'

const [url, set, numberArg, screenshot, timeoutArg] = process.argv.slice(2)
if (!url || !set || !numberArg || !screenshot) {
  console.error('usage: node view-frametrack.mjs URL SET NUMBER SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const number = Number(numberArg)
const timeout = 1000 * Number(timeoutArg || 120)
const result = { rows: null, tip: null, view: null, zoomed: null, errors: [] }

// Whether the frame rows hold the answer for the current window.
const fetched = () => {
  const v = window.phosphorView
  const f = v && v.frameTrack
  return !!(v && v.ready && f && f.view && f.view.start === v.view.start && f.view.end === v.view.end && v.pending === 0)
}

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(fetched, { timeout, polling: 50 })
  result.rows = await page.evaluate(() => window.phosphorView.frameTrack.rows.map(r => ({ name: r.name, count: r.count, frames: r.frames })))
  // The middle of the frame's bar where the page draws it.
  const at = await page.evaluate((set, number) => {
    const row = window.phosphorView.frameTrack.rows.find(r => r.name === set)
    const e = row.frames.find(e => e.length === 3 && e[2] === number)
    if (!e) return null
    const r = row.canvas.getBoundingClientRect()
    const v = window.phosphorView.view
    const mid = e[0] + e[1] / 2
    return { x: r.left + (mid - v.start) / (v.end - v.start) * r.width, y: r.top + r.height / 2 }
  }, set, number)
  if (!at) throw new Error(`no frame ${number} of ${set} drawn`)
  await page.mouse.move(at.x, at.y)
  await page.waitForFunction(() => !document.getElementById('frame-tip').hidden, { timeout, polling: 50 })
  result.tip = await page.evaluate(() => document.getElementById('frame-tip').textContent)
  const before = await page.evaluate(() => window.phosphorView.frameTrack.answered)
  await page.mouse.click(at.x, at.y)
  await page.waitForFunction(k => window.phosphorView.frameTrack.answered > k, { timeout, polling: 50 }, before)
  await page.waitForFunction(fetched, { timeout, polling: 50 })
  result.view = await page.evaluate(() => [window.phosphorView.view.start, window.phosphorView.view.end])
  result.zoomed = await page.evaluate(set => window.phosphorView.frameTrack.rows.find(r => r.name === set).frames, set)
  await page.screenshot({ path: screenshot })
})
