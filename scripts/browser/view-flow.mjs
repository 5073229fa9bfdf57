// Clicks a slice on the page of a running `phosphor view` in headless Chromium and reports the
// flow arrows drawn for it, as one JSON object:
//   {"arrows": N, "flow": "fetch #1: 3 polls", "name": "...", "errors": [...]}
//
// Usage: node view-flow.mjs URL SLICE_JSON SCREENSHOT [TIMEOUT_SECONDS]
// SLICE_JSON names the slice to click: {"tid": N, "level": L, "start": S, "end": E}, times on the
// page's timeline. Chromium: $CHROMIUM, else /usr/bin/chromium.
import { check, clickSlice } from './page.mjs'

const [url, sliceArg, screenshot, timeoutArg] = process.argv.slice(2)
if (!url || !sliceArg || !screenshot) {
  console.error('usage: node view-flow.mjs URL SLICE_JSON SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const target = JSON.parse(sliceArg)
const timeout = 1000 * Number(timeoutArg || 120)
const result = { arrows: null, flow: null, name: null, errors: [] }

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
  // Show the slice across the middle of the screen, then click its middle.
  const n = await page.evaluate(() => window.phosphorView.answered)
  const pad = (target.end - target.start) * 2 + 1
  await page.evaluate((s, e) => window.phosphorView.show(s, e), target.start - pad, target.end + pad)
  await page.waitForFunction(k => window.phosphorView.pending === 0 && window.phosphorView.answered > k, { timeout, polling: 50 }, n)
  await clickSlice(page, target)
  await page.waitForFunction(() => document.querySelector('#flow-overlay')?.dataset.arrows !== undefined, { timeout, polling: 50 })
  result.arrows = await page.evaluate(() => Number(document.querySelector('#flow-overlay').dataset.arrows))
  result.name = await page.evaluate(() => document.querySelector('#details h3').textContent)
  result.flow = await page.evaluate(() => {
    const dt = [...document.querySelectorAll('#details dt')].find(d => d.textContent === 'flow')
    return dt ? dt.nextElementSibling.textContent : null
  })
  await page.screenshot({ path: screenshot })
})
