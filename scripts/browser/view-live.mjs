// Checks of the live viewer (`phosphor record --view`, issue 39 defect 11) in headless Chromium,
// one scenario a run. It prints a line `{"step": NAME, ...}` at each point where the Rust test
// that drives it has something to do (connect the traced program, end the recording), then one
// JSON object with what it saw and `errors`. Every wait is on the page's state or the API, never
// a sleep.
//
// Usage: node view-live.mjs SCENARIO URL SCREENSHOT [TIMEOUT_SECONDS]
// SCENARIO:
//   waiting    the page before any program connects: a waiting notice naming the recorder's
//              address; prints {"step": "waiting"}, then waits for the timeline to replace it
//              once the test connects a program (no reload).
//   recording  while recording: a clicked slice's arguments, a search, the statistics table and
//              a row's histogram, from what the live view holds.
//   stale      panels as data comes: the statistics panel marked stale with a refresh control
//              while recording; prints {"step": "end"}, after which the test ends the recording;
//              once the trace is indexed the panel and the details are computed again from it.
import { check } from './page.mjs'

const [scenario, url, screenshot, timeoutArg] = process.argv.slice(2)
if (!scenario || !url || !screenshot) {
  console.error('usage: node view-live.mjs SCENARIO URL SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const timeout = 1000 * Number(timeoutArg || 120)
const result = { errors: [] }
const step = (name, more = {}) => console.log(JSON.stringify({ step: name, ...more }))

const until = (page, fn, arg) => page.waitForFunction(fn, { timeout, polling: 30 }, arg)

// A thread track of the live trace drawn with its three levels.
const drawn = page => until(page, () => {
  const v = window.phosphorView
  return v && v.tracks.some(t => t.kind === 'thread' && t.data && t.data.slices &&
    t.data.slices.levels.filter(l => l.some(s => s[2] >= 0)).length >= 3)
})

// Clicks the newest `frame` slice drawn whole (not merged) on a thread track; gives what it
// clicked ({tid, start, end}).
async function clickFrame(page) {
  // The newest 20 ms, where a frame is several pixels wide.
  await page.evaluate(() => {
    const v = window.phosphorView
    v.show(v.span.end - 2e7, v.span.end)
  })
  const at = await until(page, () => {
    const v = window.phosphorView
    for (const t of v.tracks.filter(k => k.kind === 'thread' && k.data && k.data.slices)) {
      const names = t.data.slices.names
      const level = t.data.slices.levels[0] || []
      // Ended (not a begin still open, whose end moves on).
      const frames = level.filter(s => s[2] >= 0 && names[s[2]] === 'frame' && !(s[4] & 4) && s[0] >= v.view.start && s[1] <= v.view.end)
      // Wide enough to hit.
      const w = t.canvas.getBoundingClientRect().width
      const wide = frames.filter(s => (s[1] - s[0]) / (v.view.end - v.view.start) * w >= 4)
      if (!wide.length) continue
      const s = wide[wide.length - 1]
      t.canvas.scrollIntoView({ block: 'center' })
      const r = t.canvas.getBoundingClientRect()
      const mid = (s[0] + s[1]) / 2
      return { tid: t.tid, start: s[0], end: s[1], x: r.left + (mid - v.view.start) / (v.view.end - v.view.start) * r.width, y: r.top + 9 }
    }
    return null
  }).then(h => h.jsonValue())
  await page.mouse.click(at.x, at.y)
  return at
}

// The details panel's rows as {term: text}, and its heading.
const details = page => page.evaluate(() => {
  const d = document.querySelector('#details')
  const rows = {}
  const dts = [...d.querySelectorAll('dt')]
  dts.forEach(dt => { rows[dt.textContent] = dt.nextElementSibling ? dt.nextElementSibling.textContent : '' })
  const h = d.querySelector('h3')
  return { name: h ? h.textContent : null, rows, stale: d.dataset.stale || '' }
})

// The results panel once it is not computing.
const idlePanel = page => until(page, () => document.querySelector('#results').dataset.busy !== '1')

async function openStats(page) {
  await page.evaluate(() => { document.querySelector('#results').dataset.kinds = '' })
  await page.click('#stats-button')
  await until(page, () => document.querySelector('#results').dataset.kinds)
  await idlePanel(page)
}

// The statistics table as shown: its heading and its rows ({path, count}).
const statsShown = page => page.evaluate(() => {
  const r = document.querySelector('#results')
  const head = r.querySelector('p')
  const rows = [...r.querySelectorAll('#stats tr')].slice(1).map(tr => ({ path: tr.dataset.path, count: Number(tr.dataset.count) }))
  return { head: head ? head.textContent : '', rows, kinds: Number(r.dataset.kinds || 0) }
})

async function search(page, q) {
  await page.evaluate(() => { document.querySelector('#search').value = ''; document.querySelector('#search-at').textContent = '' })
  await page.click('#search')
  await page.keyboard.type(q)
  await page.keyboard.press('Enter')
  await until(page, () => / of |found/.test(document.querySelector('#search-at').textContent))
  await idlePanel(page)
}

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  if (scenario === 'waiting') {
    // Before any program connects: a notice, not a blank page.
    await until(page, () => {
      const w = document.querySelector('#waiting')
      return w && w.offsetHeight > 0 && /waiting/i.test(w.textContent)
    })
    result.waiting = await page.$eval('#waiting', w => w.textContent)
    await page.screenshot({ path: screenshot.replace(/\.png$/, '-waiting.png') })
    step('waiting')
    // The test connects a program: the timeline replaces the notice, without a reload.
    await page.evaluate(() => { window.notReloaded = true })
    await drawn(page)
    result.waiting_after = await page.evaluate(() => {
      const w = document.querySelector('#waiting')
      return w ? w.textContent : null
    })
    result.not_reloaded = await page.evaluate(() => window.notReloaded === true)
    result.group = await page.$eval('#tracks .group', g => g.textContent)
  } else if (scenario === 'recording') {
    await drawn(page)
    // A clicked slice's arguments, while it is being recorded.
    result.clicked = await clickFrame(page)
    await until(page, () => document.querySelector('#details h3') && document.querySelector('#details h3').textContent === 'frame' &&
      [...document.querySelectorAll('#details dt')].some(dt => dt.textContent === 'n' || dt.textContent === 'event'))
    result.details = await details(page)
    // Search: hits in what is recorded so far, the first one selected.
    await search(page, 'step')
    result.search = await page.evaluate(() => ({
      total: Number(document.querySelector('#results').dataset.total),
      at: document.querySelector('#search-at').textContent,
      head: (document.querySelector('#results p') || {}).textContent || '',
    }))
    await until(page, () => document.querySelector('#details h3') && document.querySelector('#details h3').textContent === 'step')
    result.search_selected = await details(page)
    // Statistics, and a row's histogram.
    await openStats(page)
    result.stats = await statsShown(page)
    if (await page.$('#stats tr[data-path="frame/update/step"]')) {
      await page.evaluate(() => document.querySelector('#stats tr[data-path="frame/update/step"]').click())
      await until(page, () => document.querySelector('#kind') && document.querySelector('#results').dataset.busy !== '1')
      result.kind = await page.$eval('#kind', k => ({ count: Number(k.dataset.count), slowest_ns: Number(k.dataset.slowestNs), listed: k.querySelectorAll('li').length, head: k.querySelector('h3').textContent }))
    }
    await page.screenshot({ path: screenshot })
  } else if (scenario === 'stale') {
    await drawn(page)
    await openStats(page)
    result.stats_live = await statsShown(page)
    // New data comes: the panel says it is stale and offers a refresh.
    await until(page, () => {
      const s = document.querySelector('#panel-stale')
      return s && s.offsetHeight > 0 && s.querySelector('button')
    })
    result.stale_note = await page.$eval('#panel-stale', s => s.textContent)
    const gen = await page.$eval('#results', r => Number(r.dataset.gen || 0))
    await page.click('#panel-stale button')
    await until(page, gen => {
      const r = document.querySelector('#results')
      return Number(r.dataset.gen || 0) > gen && r.dataset.busy !== '1' && r.dataset.kinds
    }, gen)
    result.stats_refreshed = await statsShown(page)
    // A slice's details from the live view.
    await clickFrame(page)
    await until(page, () => document.querySelector('#details h3') && document.querySelector('#details h3').textContent === 'frame' &&
      [...document.querySelectorAll('#details dt')].some(dt => dt.textContent === 'n' || dt.textContent === 'event'))
    result.details_live = await details(page)
    // The recording ends and the trace is indexed: the open panels follow without a reload.
    await page.evaluate(() => { window.notReloaded = true })
    step('end')
    await until(page, () => window.phosphorView.traces.length && window.phosphorView.traces.every(t => t.state === 'ready'))
    await until(page, () => {
      const r = document.querySelector('#results')
      const p = r.querySelector('p')
      return r.dataset.busy !== '1' && r.dataset.kinds && p && !/live/.test(p.textContent) && !document.querySelector('#panel-stale')
    })
    result.stats_indexed = await statsShown(page)
    await until(page, () => {
      const d = document.querySelector('#details')
      return d.dataset.live === '0' && d.querySelector('h3')
    })
    result.details_indexed = await details(page)
    result.not_reloaded = await page.evaluate(() => window.notReloaded === true)
    await page.screenshot({ path: screenshot })
  } else {
    throw new Error(`no scenario ${scenario}`)
  }
}, 1400, 900)
