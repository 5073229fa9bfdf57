// Drives the page of a running `phosphor view` in headless Chromium, as a person would, and prints
// what happened as one JSON object:
//   {"labels": [...], "zoomed": {"before": [s, e], "after": [s, e]}, "panned": {...},
//    "clicked": {"name": "...", "duration_ns": N, "shown": "..."},
//    "searched": {"total": N, "at": "1 of N", "selected": "..."}, "errors": [...]}
//
// Usage: node view-check.mjs URL SLICE_JSON SEARCH SCREENSHOT [TIMEOUT_SECONDS]
// SLICE_JSON names the slice to click: {"tid": N, "level": L, "start": S, "end": E}, times on the
// page's timeline. Chromium: $CHROMIUM, else /usr/bin/chromium.
import { check, clickSlice, seeAll } from './page.mjs'

const [url, sliceArg, term, screenshot, timeoutArg] = process.argv.slice(2)
if (!url || !sliceArg || !term || !screenshot) {
  console.error('usage: node view-check.mjs URL SLICE_JSON SEARCH SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const target = JSON.parse(sliceArg)
const timeout = 1000 * Number(timeoutArg || 120)
const result = { labels: [], zoomed: null, panned: null, clicked: null, searched: null, errors: [] }

// Waits until every request the page made has been answered and one more than `after` was.
const settled = (page, after) =>
  page.waitForFunction(n => window.phosphorView.pending === 0 && window.phosphorView.answered > n, { timeout, polling: 50 }, after)
const view = page => page.evaluate(() => [window.phosphorView.view.start, window.phosphorView.view.end])
const answered = page => page.evaluate(() => window.phosphorView.answered)

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
  result.labels = await page.$$eval('.track .label', ls => ls.map(l => l.textContent))
  // Every track drew what it was sent (async lanes included), as it came into sight.
  await seeAll(page, timeout)
  result.drawn = await page.evaluate(() => window.phosphorView.tracks.map(t => ({ name: t.name, kind: t.kind, drawn: t.drawn })))

  // Zoom in with the keyboard (W), then pan (D): the visible window changes as asked.
  await page.click('#ruler')
  let before = await view(page)
  let n = await answered(page)
  for (let i = 0; i < 3; i++) await page.keyboard.press('w')
  await settled(page, n)
  result.zoomed = { before, after: await view(page) }
  before = await view(page)
  n = await answered(page)
  await page.keyboard.press('d')
  await settled(page, n)
  result.panned = { before, after: await view(page) }

  // Show the slice across the middle half of the screen, then click its middle.
  const pad = (target.end - target.start) / 2 + 1
  n = await answered(page)
  await page.evaluate((s, e) => window.phosphorView.show(s, e), target.start - pad, target.end + pad)
  await settled(page, n)
  await clickSlice(page, target)
  await page.waitForFunction(() => document.querySelector('#details').dataset.durationNs !== undefined, { timeout, polling: 50 })
  result.clicked = await page.evaluate(() => ({
    name: document.querySelector('#details h3').textContent,
    duration_ns: Number(document.querySelector('#details').dataset.durationNs),
    shown: document.querySelector('#details dd').textContent,
  }))

  // Search: type the term, press Enter; the first hit is shown and selected.
  await page.click('#search')
  await page.keyboard.type(term)
  await page.keyboard.press('Enter')
  await page.waitForFunction(() => document.querySelector('#results').dataset.total !== undefined && document.querySelector('#search-at').textContent !== '', { timeout, polling: 50 })
  await page.waitForFunction(() => window.phosphorView.pending === 0, { timeout, polling: 50 })
  result.searched = await page.evaluate(() => ({
    total: Number(document.querySelector('#results').dataset.total),
    at: document.querySelector('#search-at').textContent,
    listed: document.querySelectorAll('#results li').length,
    selected: (document.querySelector('#details h3') || {}).textContent,
  }))
  // Next (Enter again) moves to the second hit.
  await page.click('#search')
  await page.keyboard.press('Enter')
  await page.waitForFunction(() => document.querySelector('#search-at').textContent.startsWith('2 of'), { timeout, polling: 50 })
  result.searched.next = await page.evaluate(() => document.querySelector('#search-at').textContent)
  // A log found by its format string shows its formatted message.
  await page.$eval('#search', el => { el.value = '' })
  await page.click('#search')
  await page.keyboard.type('reached')
  await page.keyboard.press('Enter')
  await page.waitForFunction(() => document.querySelector('#search-at').textContent.startsWith('1 of') && window.phosphorView.search.q === 'reached', { timeout, polling: 50 })
  await page.waitForFunction(() => window.phosphorView.pending === 0 && document.querySelector('#details').dataset.message, { timeout, polling: 50 })
  result.searched.log = await page.evaluate(() => document.querySelector('#details h3').textContent)

  // The statistics panel, of everything: its rows by path.
  await page.click('#stats-button')
  await page.waitForFunction(() => document.querySelector('#results').dataset.kinds !== undefined, { timeout, polling: 50 })
  result.stats = await page.$$eval('#results tr[data-path]', rows =>
    rows.map(r => ({ path: r.dataset.path, count: Number(r.dataset.count), total_ns: Number(r.dataset.totalNs) })))
  // A row's histogram and slowest occurrences.
  await page.click('#results tr[data-path="batch/iteration"]')
  await page.waitForFunction(() => document.querySelector('#kind') && document.querySelector('#kind').dataset.count, { timeout, polling: 50 })
  result.kind = await page.evaluate(() => ({
    count: Number(document.querySelector('#kind').dataset.count),
    slowest_ns: Number(document.querySelector('#kind').dataset.slowestNs),
    listed: document.querySelectorAll('#kind li').length,
  }))
  await page.screenshot({ path: screenshot.replace(/\.png$/, '-stats.png') })

  // The flame graph of everything: a box per path drawn, as wide as the scopes' time.
  await page.click('#flame-button')
  await page.waitForFunction(() => document.querySelector('#flame'), { timeout, polling: 50 })
  result.flame = await page.evaluate(() => ({
    boxes: Number(document.querySelector('#flame').dataset.boxes),
    total_ns: Number(document.querySelector('#flame').dataset.totalNs),
  }))
  await page.screenshot({ path: screenshot })
})
