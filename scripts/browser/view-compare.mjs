// Checks of the comparison panel of a running `phosphor view BASE NEW --compare` in headless
// Chromium: the panel opens by itself with the diff's rows, a significant change is marked, a
// column's head sorts by its change, a click on a row lists its slowest occurrences in BASE and in
// NEW, and a click on an occurrence selects that slice of that trace on the timeline. Prints one
// JSON object and `errors`. Every wait is on the page's state (its rows, `data-busy`, `idle()`,
// the selected slice), never a sleep.
//
// Usage: node view-compare.mjs URL PARAMS_JSON SCREENSHOT_DIR [TIMEOUT_SECONDS]
// PARAMS_JSON: {"row": "frame/step", "async_row": "load"}: the paths of the rows to click (a scope's,
// an async slice's).
import { check, recordTexts } from './page.mjs'

const [url, paramsArg, shots, timeoutArg] = process.argv.slice(2)
if (!url || !paramsArg || !shots) {
  console.error('usage: node view-compare.mjs URL PARAMS_JSON SCREENSHOT_DIR [TIMEOUT_SECONDS]')
  process.exit(2)
}
const P = JSON.parse(paramsArg)
const timeout = 1000 * Number(timeoutArg || 120)
const result = { errors: [] }

const until = (page, fn, arg) => page.waitForFunction(fn, { timeout, polling: 30 }, arg)

// Waits until no panel computes and the timeline has drawn its view.
const done = page => until(page, () => document.querySelector('#results').dataset.busy !== '1' && window.phosphorView.idle())

// The rows as shown, in their order: path, type, status, mark, classes, the colours of the mark
// and the path, the change line and the figures.
const rows = page => page.evaluate(() => [...document.querySelectorAll('#compare tbody.cmp-row')].map(b => {
  const mark = b.querySelector('td.mark')
  const change = b.querySelector('tr.change')
  return {
    row: Number(b.dataset.row),
    path: b.dataset.path,
    type: b.dataset.type,
    status: b.dataset.status,
    significant: b.dataset.significant === '1',
    direction: b.dataset.direction,
    mark: mark.textContent,
    classes: [...b.classList],
    mark_colour: getComputedStyle(mark).color,
    name_colour: getComputedStyle(b.querySelector('td.name')).color,
    changes: [...change.querySelectorAll('td.change')].map(td => td.textContent),
    p: change.querySelector('td.p').textContent,
    figures: [...b.querySelectorAll('tr.base td, tr.new td')].map(td => td.textContent),
  }
}))

// Clicks the head of the column labelled `label` and gives the rows' paths in their new order.
async function sortBy(page, label) {
  await page.evaluate(label => {
    const th = [...document.querySelectorAll('#compare th')].find(h => h.textContent.replace(/ [▾▴]$/, '') === label)
    th.click()
  }, label)
  return (await rows(page)).map(r => ({ path: r.path, change: r.changes }))
}

// Clicks the first occurrence listed on side `which` and waits until the timeline selected it.
async function clickOccurrence(page, which) {
  const li = await page.evaluate(which => {
    const li = document.querySelector(`#compare-occ .occ.${which} li`)
    li.scrollIntoView({ block: 'nearest' })
    return { trace: Number(li.dataset.trace), index: Number(li.dataset.index), duration_ns: Number(li.dataset.durationNs), text: li.textContent }
  }, which)
  await page.click(`#compare-occ .occ.${which} li`)
  await until(page, li => {
    const s = window.phosphorView.selected
    return s && s.trace === li.trace && s.index === li.index && document.querySelector('#details').dataset.durationNs === String(li.duration_ns)
  }, li)
  await done(page)
  const shown = await page.evaluate(() => {
    const v = window.phosphorView
    return {
      selected: { trace: v.selected.trace, index: v.selected.index, start: v.selected.start, end: v.selected.end },
      view: { start: v.view.start, end: v.view.end },
      details: document.querySelector('#details h3').textContent,
      // The details' rows ([term, text]): a thread's slice has `thread`, an async one `track`.
      rows: [...document.querySelectorAll('#details dt')].map(dt => [dt.textContent, dt.nextElementSibling.textContent]),
      duration_ns: Number(document.querySelector('#details').dataset.durationNs),
    }
  })
  return { clicked: li, ...shown }
}

await check(result, timeout, async page => {
  await page.evaluateOnNewDocument(recordTexts)
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await until(page, () => window.phosphorView && window.phosphorView.ready)
  // The panel opens by itself once the server has compared the traces.
  await until(page, () => document.querySelectorAll('#compare tbody.cmp-row').length > 0)
  await done(page)
  result.button_hidden = await page.evaluate(() => document.querySelector('#compare-button').hidden)
  result.head = await page.evaluate(() => document.querySelector('#compare-head').textContent)
  result.traces = await page.evaluate(() => window.phosphorView.traces.map(t => ({ trace: t.trace, file: t.file, state: t.state })))
  result.rows = await rows(page)
  await page.screenshot({ path: `${shots}/compare.png` })

  result.sorted_p50 = await sortBy(page, 'p50')
  result.sorted_p50_again = await sortBy(page, 'p50')
  result.diff_order = (await sortBy(page, '#')).map(r => r.path)

  result.occurrences = await openRow(page, P.row)
  result.new_click = await clickOccurrence(page, 'new')
  result.base_click = await clickOccurrence(page, 'base')
  await page.screenshot({ path: `${shots}/compare-occurrences.png` })
  if (P.async_row) {
    result.async_occurrences = await openRow(page, P.async_row)
    result.async_click = await clickOccurrence(page, 'new')
  }
})

// Clicks the row of `path` and waits for its occurrences on either side; gives them.
async function openRow(page, path) {
  await page.evaluate(path => {
    const b = [...document.querySelectorAll('#compare tbody.cmp-row')].find(x => x.dataset.path === path)
    b.scrollIntoView({ block: 'nearest' })
    b.querySelector('td.side').click()
  }, path)
  await until(page, path => {
    const box = document.querySelector('#compare-occ')
    return box && box.querySelector('h3').textContent.startsWith(path + ' (')
  }, path)
  await done(page)
  return page.evaluate(() => {
    const box = document.querySelector('#compare-occ')
    const side = which => {
      const d = box.querySelector(`.occ.${which}`)
      return {
        trace: Number(d.dataset.trace),
        head: d.querySelector('p').textContent,
        listed: [...d.querySelectorAll('li')].map(li => ({ index: Number(li.dataset.index), duration_ns: Number(li.dataset.durationNs), text: li.textContent })),
      }
    }
    const open = document.querySelector('#compare tbody.cmp-row.at')
    return { title: box.querySelector('h3').textContent, base: side('base'), new: side('new'), open: open ? open.dataset.path : null, rows_after: document.querySelectorAll('#compare tbody.cmp-row').length }
  })
}
