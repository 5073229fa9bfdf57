// The long polls of a running `phosphor view` in headless Chromium, on the viewer's crafted trace
// (crates/phosphor-view/src/long_poll_tests.rs: thread 101, a long poll from 60 to 100 ms holding
// CPU samples at 70, 75 and 92 ms): opens the Tasks panel, reads the long polls' rows, clicks the
// first, and reads the selection and the stacks listed; reads the colour drawn at the long poll's
// slice on the timeline; clicks that slice and reads the stacks in its details; then searches for
// every long poll from the panel. Prints one JSON object:
//   {"rows": ["cell | cell | ..."], "selection": [start, end], "head": "...",
//    "stacks": [[count, "leaf ← caller"]], "flag": true or the pixel drawn, "level": n,
//    "details": [[count, "..."]], "searched": n, "errors": [...]}
//
// Usage: node view-long-polls.mjs URL SCREENSHOT [TIMEOUT_SECONDS]
import { check, clickSlice, waitIdle } from './page.mjs'

const [url, screenshot, timeoutArg] = process.argv.slice(2)
if (!url || !screenshot) {
  console.error('usage: node view-long-polls.mjs URL SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const timeout = 1000 * Number(timeoutArg || 120)
const TID = 101
const MS = 1e6
// format.js's LONG_POLL_FILL.
const FLAG = [0xd6, 0x27, 0x28, 255]
const result = { rows: null, selection: null, head: null, stacks: null, flag: null, details: null, errors: [] }

const stacksIn = sel => [...document.querySelectorAll(`${sel} .stacks tr`)]
  .map(r => [Number(r.dataset.count), r.querySelector('td.frames').textContent])

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
  await waitIdle(page, timeout)
  // The long poll's slice (on the level the page was given it: its poll has the same interval)
  // is drawn in the flag's red (the whole trace in view, nothing selected over it).
  result.flag = await page.evaluate((tid, ms, want) => {
    const v = window.phosphorView
    const track = v.tracks.find(k => k.kind === 'thread' && k.tid === tid)
    const c = track.canvas
    const r = c.getBoundingClientRect()
    const scale = c.width / r.width
    const x = Math.round((v.span.start + 80 * ms - v.view.start) / (v.view.end - v.view.start) * c.width)
    const { levels, names, from } = track.data.slices
    const level = from + levels.findIndex(items => items.some(it => it[2] >= 0 && names[it[2]] === 'long poll'))
    // Near the top of its row: under the fill, above the label's text.
    const y = Math.round((18 * level + 3) * scale)
    const got = Array.from(c.getContext('2d').getImageData(x, y, 1, 1).data)
    return got.every((b, i) => b === want[i]) || { level, got }
  }, TID, MS, FLAG)
  result.level = await page.evaluate(tid => {
    const { levels, names, from } = window.phosphorView.tracks.find(k => k.kind === 'thread' && k.tid === tid).data.slices
    return from + levels.findIndex(items => items.some(it => it[2] >= 0 && names[it[2]] === 'long poll'))
  }, TID)

  await page.click('#tasks-button')
  await page.waitForFunction(() => document.querySelector('#results table#long-polls tr[data-task]'), { timeout, polling: 50 })
  result.rows = await page.$$eval('#long-polls tr[data-task]', rs => rs.map(r => [...r.cells].map(c => c.textContent).join(' | ')))

  // The long poll clicked: selected, shown, and its samples' stacks listed.
  // The panel may draw its tables again while the tasks' answer lands, so the row is found and
  // clicked in one step in the page (a handle taken before could be detached by the click), and
  // clicked again until its stacks are listed.
  await page.waitForFunction(() => {
    if (document.querySelector('#long-poll-stacks .stacks h3')) return true
    const row = document.querySelector('#long-polls tr[data-task]')
    if (row) row.click()
    return false
  }, { timeout, polling: 50 })
  result.head = await page.$eval('#long-poll-stacks .stacks h3', h => h.textContent)
  result.stacks = await page.evaluate(`(${stacksIn})('#long-poll-stacks')`)
  result.selection = await page.evaluate(() => {
    const v = window.phosphorView
    return v.selection && v.selection.map(t => t - v.span.start)
  })
  await waitIdle(page, timeout)
  await page.screenshot({ path: screenshot })

  // Clicked on the timeline, its details list the same stacks.
  const origin = await page.evaluate(() => window.phosphorView.span.start)
  await clickSlice(page, { tid: TID, level: result.level, start: origin + 60 * MS, end: origin + 100 * MS })
  await page.waitForFunction(() => document.querySelector('#details .stacks h3'), { timeout, polling: 50 })
  result.details = await page.evaluate(`(${stacksIn})('#details')`)

  // "search all": a search for the long poll slices, counted.
  await page.click('#tasks-button')
  // Found and clicked in one step in the page, as the row above.
  await page.waitForFunction(() => {
    const s = window.phosphorView.search
    if (s && s.q === 'long poll') return true
    const button = document.querySelector('#long-polls-search')
    if (button) button.click()
    return false
  }, { timeout, polling: 50 })
  await page.waitForFunction(() => {
    const s = window.phosphorView.search
    return s && s.q === 'long poll' && /found|of/.test(document.getElementById('search-at').textContent)
  }, { timeout, polling: 50 })
  result.searched = await page.evaluate(() => window.phosphorView.search.total)
})
