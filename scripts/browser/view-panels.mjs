// Checks of the side panels of a running `phosphor view` (issue 39: search, the range bar, the
// statistics table and histogram, the flame graph, slow answers), in headless Chromium; prints one
// JSON object, a member per check asked for, and `errors`. Each canvas's texts are recorded
// (`fillText` wrapped before the page loads). Every wait is on the page's signals (`idle()`, the
// panels' `data-busy`), never a sleep.
//
// Usage: node view-panels.mjs URL PARAMS_JSON SCREENSHOT_DIR [TIMEOUT_SECONDS]
// PARAMS_JSON: {"checks": ["search", "range", "table", "flame", "busy"], "dpr": 2}
import { runChecks, settle } from './page.mjs'

const [url, paramsArg, shots, timeoutArg] = process.argv.slice(2)
if (!url || !paramsArg || !shots) {
  console.error('usage: node view-panels.mjs URL PARAMS_JSON SCREENSHOT_DIR [TIMEOUT_SECONDS]')
  process.exit(2)
}
const P = JSON.parse(paramsArg)
const timeout = 1000 * Number(timeoutArg || 120)
const result = { errors: [] }

// Waits for `fn(arg)` in the page; a page that never gets there fails the check.
const until = (page, fn, arg) => page.waitForFunction(fn, { timeout, polling: 30 }, arg)

// Waits until the panels and the timeline are done: no panel computing, nothing fetching.
const done = page => until(page, () => document.querySelector('#results').dataset.busy !== '1' && window.phosphorView.idle())

const view = page => page.evaluate(() => ({ ...window.phosphorView.view }))

// Types `q` into the search box and waits for its first hit to be shown.
async function search(page, q) {
  await page.evaluate(() => { document.querySelector('#search').value = ''; document.querySelector('#search-at').textContent = '' })
  await page.click('#search')
  await page.keyboard.type(q)
  await page.keyboard.press('Enter')
  await until(page, () => / of |found/.test(document.querySelector('#search-at').textContent))
  await done(page)
}

// Shift-drags across the `main` thread's track from `a` to `b` (shares of its width).
async function dragRange(page, a, b) {
  const box = await page.evaluate(() => {
    const t = window.phosphorView.tracks.find(k => k.kind === 'thread' && k.name.startsWith('main'))
    t.canvas.scrollIntoView({ block: 'nearest' })
    const r = t.canvas.getBoundingClientRect()
    return { left: r.left, top: r.top, width: r.width }
  })
  const y = box.top + 9
  await page.keyboard.down('Shift')
  await page.mouse.move(box.left + a * box.width, y)
  await page.mouse.down()
  await page.mouse.move(box.left + a * box.width + 20, y)
  await page.mouse.move(box.left + b * box.width, y)
  await page.mouse.up()
  await page.keyboard.up('Shift')
}

// The statistics panel as shown: its range ('' for the whole trace) and slices counted.
const statsShown = page => page.evaluate(() => {
  const r = document.querySelector('#results')
  const head = r.querySelector('p')
  return { range: r.dataset.range ?? null, slices: head ? Number((/(\d+) slices/.exec(head.textContent) || [])[1]) : null, busy: r.dataset.busy === '1' }
})

async function openStats(page) {
  await page.evaluate(() => { document.querySelector('#results').dataset.kinds = '' })
  await page.click('#stats-button')
  await until(page, () => document.querySelector('#results').dataset.kinds)
  await done(page)
}

async function openFlame(page) {
  await page.click('#flame-button')
  await until(page, () => document.querySelector('#flame'))
  await done(page)
}

// The flame graph's canvas: its sizes and texts.
const flameShown = page => page.evaluate(() => {
  const c = document.querySelector('#flame')
  const r = c.getBoundingClientRect()
  return { width: c.width, css_width: r.width, texts: (c.texts || []).map(t => ({ text: t.text, x: t.x, y: t.y })), focus: c.dataset.focus ?? null, matches: c.dataset.matches ?? null }
})

// Clicks (or hovers) the flame graph's frame labelled `label` (or `label (…)`).
async function atFrame(page, label, click) {
  const p = await page.evaluate(label => {
    const c = document.querySelector('#flame')
    const r = c.getBoundingClientRect()
    const t = (c.texts || []).find(x => x.text === label || x.text.startsWith(`${label} (`))
    return t && { x: r.left + t.x + 2, y: r.top + t.y }
  }, label)
  if (!p) throw new Error(`no frame labelled ${label}`)
  if (click) await page.mouse.click(p.x, p.y)
  else await page.mouse.move(p.x, p.y)
}

const CHECKS = {
  // Defect 5: an async hit, then a thread's: shown, selected, ticked, listed to the nanosecond.
  async search(page) {
    const out = {}
    const seen = () => page.evaluate(() => {
      const v = window.phosphorView
      const ticks = {}
      for (const t of v.tracks) if (t.kind === 'thread' && Number(t.canvas.dataset.searchTicks) > 0) ticks[t.name.split(' ')[0]] = Number(t.canvas.dataset.searchTicks)
      return {
        hit: v.search.hits[0],
        view: { ...v.view },
        span: [v.span.start, v.span.end],
        selected: v.selected ? v.selected.index : null,
        details: (document.querySelector('#details h3') || {}).textContent || null,
        first: (document.querySelector('#results li') || {}).textContent || null,
        ticks,
      }
    })
    await search(page, 'fetch')
    out.async = await seen()
    await page.keyboard.press('0')
    await done(page)
    await search(page, 'iteration')
    out.iteration = await seen()
    await page.screenshot({ path: `${shots}/search.png` })
    // 1,500 hits, 1,000 listed: the whole trace shown, every hit is ticked, to the last.
    await search(page, 'tick')
    await page.keyboard.press('0')
    await done(page)
    out.ticks = await page.evaluate(() => {
      const v = window.phosphorView
      const t = v.tracks.find(k => k.kind === 'thread' && k.name.startsWith('ticker'))
      const x = ns => (ns - v.view.start) / (v.view.end - v.view.start) * t.canvas.getBoundingClientRect().width
      return { listed: v.search.hits.length, total: v.search.total, last: Number(t.canvas.dataset.searchTickLast), ticks: Number(t.canvas.dataset.searchTicks), want: x(v.span.start + 1499 * 60000 + 20000) }
    })
    // The box emptied and entered: no ticks left.
    await page.evaluate(() => { document.querySelector('#search').value = '' })
    await page.click('#search')
    await page.keyboard.press('Enter')
    await done(page)
    out.ticks.cleared = await page.evaluate(() => window.phosphorView.tracks.find(k => k.kind === 'thread' && k.name.startsWith('ticker')).canvas.dataset.searchTicks)
    return out
  },
  // Defect 6: a range over the statistics and the flame graph; zoom to, clear, Esc.
  async range(page) {
    const out = {}
    await openStats(page)
    out.whole = (await statsShown(page)).slices
    await dragRange(page, 0.1, 0.35)
    await until(page, () => document.querySelector('#results').dataset.range)
    await done(page)
    out.ranged = await statsShown(page)
    out.bar = await page.evaluate(() => { const b = document.querySelector('#range-bar'); return b && !b.hidden ? b.textContent.trim() : null })
    const n = await page.evaluate(() => window.phosphorView.answered)
    await page.click('#range-zoom')
    await settle(page, n, timeout)
    out.zoomed = { selection: await page.evaluate(() => window.phosphorView.selection), view: await view(page) }
    await page.click('#range-clear')
    await until(page, () => document.querySelector('#results').dataset.range === '')
    await done(page)
    out.cleared = { ...(await statsShown(page)), selection: await page.evaluate(() => window.phosphorView.selection), bar_hidden: await page.evaluate(() => document.querySelector('#range-bar').hidden) }
    await page.keyboard.press('0')
    await done(page)
    await dragRange(page, 0.1, 0.35)
    await openFlame(page)
    out.flame_ranged = await page.evaluate(() => document.querySelector('#flame-head').textContent)
    await page.keyboard.press('Escape')
    await until(page, () => /everything/.test((document.querySelector('#flame-head') || {}).textContent || ''))
    await done(page)
    out.flame_after_esc = await page.evaluate(() => document.querySelector('#flame-head').textContent)
    return out
  },
  // Defect 8: the table's fit, names and trace column; a row's histogram.
  async table(page) {
    await openStats(page)
    const out = await page.evaluate(() => {
      const r = document.querySelector('#results')
      const t = r.querySelector('table')
      return {
        scroll_width: r.scrollWidth,
        client_width: r.clientWidth,
        table_width: t.getBoundingClientRect().width,
        heads: [...t.querySelectorAll('th')].map(th => th.textContent.replace(/[ ▾▴]+$/, '')),
        names: [...t.querySelectorAll('td.name')].map(td => td.firstChild.textContent),
      }
    })
    await page.click('#results tr[data-path="batch/iteration"]')
    await until(page, () => document.querySelector('#histogram'))
    await done(page)
    out.histogram = await page.evaluate(() => {
      const c = document.querySelector('#histogram')
      const r = c.getBoundingClientRect()
      const p = document.querySelector('#results')
      return { width: c.width, height: c.height, css_width: r.width, css_height: r.height, texts: (c.texts || []).map(t => t.text), scroll_width: p.scrollWidth, client_width: p.clientWidth }
    })
    await page.screenshot({ path: `${shots}/histogram.png` })
    return out
  },
  // Defect 8: the flame graph's labels, hover, zoom, thread and search.
  async flame(page) {
    await openFlame(page)
    const whole = await flameShown(page)
    const out = { width: whole.width, css_width: whole.css_width, texts: whole.texts.map(t => t.text) }
    await atFrame(page, 'iteration', false)
    await until(page, () => { const t = document.querySelector('#flame-tip'); return t && !t.hidden })
    out.tip = await page.evaluate(() => document.querySelector('#flame-tip').textContent)
    await page.screenshot({ path: `${shots}/flame.png` })
    await atFrame(page, 'iteration', true)
    const z = await flameShown(page)
    out.zoomed = { focus: z.focus }
    out.zoomed_texts = z.texts.map(t => t.text)
    await atFrame(page, 'iteration', true)
    out.up = (await flameShown(page)).focus
    await atFrame(page, 'all', true)
    out.unzoomed = (await flameShown(page)).focus
    // The panels widened by 300 px (their splitter dragged): the graph fills them.
    const bar = await page.evaluate(() => { const r = document.querySelector('#splitter').getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + 200 } })
    await page.mouse.move(bar.x, bar.y)
    await page.mouse.down()
    await page.mouse.move(bar.x - 150, bar.y)
    await page.mouse.move(bar.x - 300, bar.y)
    await page.mouse.up()
    await done(page)
    out.widened = (await flameShown(page)).css_width
    await page.select('#flame-thread', await page.evaluate(() => {
      const t = window.phosphorView.tracks.find(k => k.kind === 'thread' && k.name.startsWith('worker'))
      return `${t.trace}/${t.tid}`
    }))
    await until(page, () => document.querySelector('#flame') && document.querySelector('#flame-thread').value !== '')
    await done(page)
    out.worker_texts = (await flameShown(page)).texts.map(t => t.text)
    await page.select('#flame-thread', '')
    await until(page, () => document.querySelector('#flame') && document.querySelector('#flame-thread').value === '')
    await done(page)
    await search(page, 'iteration')
    out.matches = (await flameShown(page)).matches
    return out
  },
  // Defect 9: a range's statistics held back by the test: "computing…" past 100 ms, the old
  // table dimmed; then the range cleared (the whole trace's answer comes), then the held answer
  // let go: it is not shown. Then a search held back.
  async busy(page) {
    const out = {}
    await openStats(page)
    out.whole = (await statsShown(page)).slices
    const held = []
    await page.setRequestInterception(true)
    page.on('request', r => {
      if ((r.url().includes('/api/stats') && r.url().includes('start=')) || r.url().includes('/api/search')) held.push(r)
      else r.continue()
    })
    await dragRange(page, 0.1, 0.35)
    await until(page, () => { const b = document.querySelector('#busy'); return b && /computing/.test(b.textContent) })
    out.busy = await page.evaluate(() => document.querySelector('#busy').textContent)
    out.stale = await page.evaluate(() => document.querySelector('#results').classList.contains('stale'))
    await page.click('#range-clear')
    await until(page, () => document.querySelector('#results').dataset.busy !== '1')
    for (const r of held) await r.continue()
    await until(page, () => window.phosphorView.pending === 0)
    await done(page)
    out.after = await statsShown(page)
    out.after.busy = await page.evaluate(() => !!document.querySelector('#busy'))
    // A search held back: the box says so, the list shows "computing…"; then its hits.
    held.length = 0
    await page.click('#search')
    await page.keyboard.type('iteration')
    await page.keyboard.press('Enter')
    await until(page, () => document.querySelector('#busy'))
    out.search = { at: await page.evaluate(() => document.querySelector('#search-at').textContent) }
    for (const r of held) await r.continue()
    await until(page, () => / of /.test(document.querySelector('#search-at').textContent))
    await done(page)
    out.search.after = await page.evaluate(() => document.querySelector('#search-at').textContent)
    return out
  },
}

await runChecks(result, timeout, url, P, CHECKS)
