// Drives the page of a live viewer (`phosphor record --view`) in headless Chromium and prints what
// it saw as one JSON object: the window follows the newest data, zooming stops that, the Follow
// button resumes it.
//
// Usage: node live-check.mjs URL SCREENSHOT
import { check } from './page.mjs'

const [url, screenshot] = process.argv.slice(2)
if (!url || !screenshot) {
  console.error('usage: node live-check.mjs URL SCREENSHOT')
  process.exit(2)
}
const timeout = 120000
const result = { errors: [] }
await check(result, timeout, async page => {
  await page.goto(url)
  const wait = (f, ...args) => page.waitForFunction(f, { timeout, polling: 50 }, ...args)
  // A thread of the live trace drawn with its three levels, the window following.
  await wait(() => {
    const v = window.phosphorView
    return v.stage === 'live' && v.following &&
      v.tracks.some(t => t.kind === 'thread' && t.data && t.data.slices.levels.filter(l => l.length).length >= 3)
  })
  result.follow_button = await page.$eval('#follow-button', b => !b.hidden && b.classList.contains('on'))
  const first = await page.evaluate(() => window.phosphorView.view.end)
  // The window's end moves on with the newest data.
  await wait(end => window.phosphorView.view.end > end, first)
  result.moved = true
  result.group = await page.$eval('#tracks .group', g => g.textContent)
  // Zooming stops following; the button resumes it.
  await page.keyboard.press('s')
  result.after_zoom = await page.evaluate(() => window.phosphorView.following)
  await page.click('#follow-button')
  result.after_button = await page.evaluate(() => window.phosphorView.following)
  await page.screenshot({ path: screenshot })
}, 1400, 900)
