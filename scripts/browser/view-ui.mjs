// Checks of the timeline page of a running `phosphor view` as a Perfetto or Tracy user drives it
// (issue 39), in headless Chromium; prints one JSON object, a member per check asked for, and
// `errors`. The text each canvas draws is recorded (`fillText` is wrapped before the page
// loads), so that labels can be read back.
//
// Usage: node view-ui.mjs URL PARAMS_JSON SCREENSHOT_DIR [TIMEOUT_SECONDS]
// PARAMS_JSON: {"checks": ["ruler", ...], "dpr": 1, "slice": {"tid", "level", "start", "end"}, ...}
// with times on the page's timeline; what each check needs is read below.
import { clickSlice, open, runChecks, settle, waitIdle } from './page.mjs'

const [url, paramsArg, shots, timeoutArg] = process.argv.slice(2)
if (!url || !paramsArg || !shots) {
  console.error('usage: node view-ui.mjs URL PARAMS_JSON SCREENSHOT_DIR [TIMEOUT_SECONDS]')
  process.exit(2)
}
const P = JSON.parse(paramsArg)
const timeout = 1000 * Number(timeoutArg || 120)
const result = { errors: [] }

// A track scrolled into sight, once drawn there: where it is.
async function trackBox(page, pick) {
  await page.evaluate(pick => {
    const t = window.phosphorView.tracks.find(k => k.kind === pick.kind && (pick.tid === undefined || k.tid === pick.tid))
    t.canvas.scrollIntoView({ block: 'nearest' })
  }, pick)
  await waitIdle(page, timeout)
  return page.evaluate(pick => {
    const v = window.phosphorView
    const t = v.tracks.find(k => k.kind === pick.kind && (pick.tid === undefined || k.tid === pick.tid))
    const r = t.canvas.getBoundingClientRect()
    return { left: r.left, top: r.top, width: r.width, height: r.height, index: v.tracks.indexOf(t) }
  }, pick)
}

// The client x of time `t` on a canvas at `box`.
const clientX = async (page, box, t) => {
  const v = await page.evaluate(() => window.phosphorView.view)
  return box.left + (t - v.start) / (v.end - v.start) * box.width
}

// Shows `start`..`end` and waits until its detail is drawn.
async function show(page, start, end) {
  const n = await page.evaluate(() => window.phosphorView.answered)
  await page.evaluate((s, e) => window.phosphorView.show(s, e), start, end)
  await settle(page, n, timeout)
}

// The ruler's texts and the window they label.
const ruler = page => page.evaluate(() => {
  const c = document.querySelector('#ruler')
  const v = window.phosphorView
  return { texts: (c.texts || []).map(t => ({ text: t.text, x: t.x })), offset: c.dataset.offset || null, view: [v.view.start, v.view.end], origin: v.span.start, width: c.getBoundingClientRect().width }
})

// The details panel's rows, by name.
const details = page => page.evaluate(() => {
  const rows = {}
  for (const dt of document.querySelectorAll('#details dt')) rows[dt.textContent] = dt.nextElementSibling.textContent
  return { name: (document.querySelector('#details h3') || {}).textContent, rows }
})

async function clickAndWait(page, slice) {
  await page.evaluate(() => { document.querySelector('#details').dataset.durationNs = '' })
  await clickSlice(page, slice)
  await page.waitForFunction(() => document.querySelector('#details').dataset.durationNs, { timeout, polling: 50 })
}

// An RGBA pixel of a track's canvas at CSS (x, y).
const pixel = (page, index, x, y) => page.evaluate((i, x, y) => {
  const c = window.phosphorView.tracks[i].canvas
  const k = c.width / c.getBoundingClientRect().width
  return [...c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), 1, 1).data]
}, index, x, y)

const CHECKS = {
  // Defect 2: the ruler at the whole trace, at a 3 µs window and at 20 ns; the details of the 3 µs
  // slice.
  async ruler(page) {
    const s = P.slice
    const out = { whole: await ruler(page) }
    await show(page, s.start - 500, s.end + 500)
    out.micro = await ruler(page)
    await clickAndWait(page, s)
    out.details = await details(page)
    await show(page, s.start + 1000, s.start + 1020)
    out.nano = await ruler(page)
    await page.screenshot({ path: `${shots}/ruler-3us.png` })
    return out
  },
  // Defect 3: the 64-bit arguments of the slice, in its details.
  async args(page) {
    const s = P.slice
    await show(page, s.start - 500, s.end + 500)
    await clickAndWait(page, s)
    return details(page)
  },
  // Defect 4: the ruler's extent and the tracks'; a shift-drag's band on the ruler.
  async align(page) {
    const box = await trackBox(page, { kind: 'thread', tid: P.slice.tid })
    const geometry = await page.evaluate(() => {
      const r = document.querySelector('#ruler').getBoundingClientRect()
      const tr = document.querySelector('#tracks')
      return { ruler: [r.left, r.right], scrollbar: tr.offsetWidth - tr.clientWidth }
    })
    geometry.track = [box.left, box.left + box.width]
    // Shift-drag from 70% to 95% of the track's width.
    const y = box.top + 9
    const [a, b] = [box.left + 0.7 * box.width, box.left + 0.95 * box.width]
    await page.keyboard.down('Shift')
    await page.mouse.move(a, y)
    await page.mouse.down()
    await page.mouse.move(a + 20, y)
    await page.mouse.move(b, y)
    await page.mouse.up()
    await page.keyboard.up('Shift')
    geometry.dragged = [a, b]
    // Where the ruler is tinted, in client x.
    geometry.band = await page.evaluate(() => {
      const c = document.querySelector('#ruler')
      const r = c.getBoundingClientRect()
      const k = c.width / r.width
      const row = c.getContext('2d').getImageData(0, Math.round(2 * k), c.width, 1).data
      let lo = null, hi = null
      for (let i = 0; i < c.width; i++) {
        const [R, G, B, A] = row.slice(4 * i, 4 * i + 4)
        if (A > 0 && B > R + 20) {
          if (lo === null) lo = i
          hi = i
        }
      }
      return lo === null ? null : [r.left + lo / k, r.left + (hi + 1) / k]
    })
    return geometry
  },
  // Defect 12: the keys and the wheel.
  async nav(page) {
    const out = {}
    const span = await page.evaluate(() => window.phosphorView.span)
    const len = span.end - span.start
    const view = () => page.evaluate(() => ({ ...window.phosphorView.view }))
    // An action that changes the view schedules its fetch at once: then wait until it is done.
    const act = async f => {
      await f()
      await waitIdle(page, timeout)
    }
    await show(page, span.start + 0.3 * len, span.start + 0.7 * len)
    const box = await trackBox(page, { kind: 'thread', tid: P.slice.tid })
    // W with the pointer at a quarter of the track: the time under it stays.
    const px = box.left + box.width / 4
    await page.mouse.move(px, box.top + 9)
    let before = await view()
    const under = v => v.start + (px - box.left) / box.width * (v.end - v.start)
    await act(() => page.keyboard.press('w'))
    let after = await view()
    out.w = { before, after, under: [under(before), under(after)] }
    // ctrl+wheel about the pointer.
    before = after
    await page.keyboard.down('Control')
    await act(() => page.mouse.wheel({ deltaY: -200 }))
    await page.keyboard.up('Control')
    after = await view()
    out.ctrl_wheel = { before, after, under: [under(before), under(after)] }
    // The plain wheel scrolls the tracks and leaves the window.
    before = after
    const top = await page.evaluate(() => document.querySelector('#tracks').scrollTop)
    await page.mouse.wheel({ deltaY: 300 })
    // The scroll comes in a later frame (a page that zooms instead fails here).
    await page.waitForFunction(t => document.querySelector('#tracks').scrollTop !== t, { timeout, polling: 20 }, top).catch(() => {})
    await waitIdle(page, timeout)
    out.wheel = { before, after: await view(), scrolled: [top, await page.evaluate(() => document.querySelector('#tracks').scrollTop)] }
    // A search, then W: the key zooms, the box keeps its text.
    await page.click('#search')
    await page.keyboard.type(P.search)
    await page.keyboard.press('Enter')
    await page.waitForFunction(() => document.querySelector('#search-at').textContent !== '', { timeout, polling: 50 })
    await waitIdle(page, timeout)
    before = await view()
    await page.keyboard.press('w')
    await waitIdle(page, timeout)
    out.after_search = { before, after: await view(), box: await page.$eval('#search', e => e.value), focused: await page.evaluate(() => document.activeElement && document.activeElement.id) }
    // ? lists the keys; Esc hides the list.
    await page.keyboard.press('?')
    out.help = await page.evaluate(() => { const k = document.querySelector('#keys'); return k && !k.hidden ? k.textContent : null })
    await page.keyboard.press('Escape')
    out.help_after_esc = await page.evaluate(() => { const k = document.querySelector('#keys'); return k ? !k.hidden : null })
    // A slice clicked, then F: the view fits it; Esc clears it.
    const s = P.slice
    await show(page, s.start - 2000, s.end + 2000)
    await clickAndWait(page, s)
    await act(() => page.keyboard.press('f'))
    out.fit = { slice: [s.start, s.end], view: await view() }
    await page.keyboard.press('Escape')
    await waitIdle(page, timeout)
    out.cleared = await page.evaluate(() => ({ selected: window.phosphorView.selected || null, details: document.querySelector('#details h3') ? document.querySelector('#details h3').textContent : null }))
    // A range shift-dragged, then F: the view fits it; Esc clears it.
    const b3 = await trackBox(page, { kind: 'thread', tid: P.slice.tid })
    await page.keyboard.down('Shift')
    await page.mouse.move(b3.left + 0.2 * b3.width, b3.top + 9)
    await page.mouse.down()
    await page.mouse.move(b3.left + 0.2 * b3.width + 20, b3.top + 9)
    await page.mouse.move(b3.left + 0.4 * b3.width, b3.top + 9)
    await page.mouse.up()
    await page.keyboard.up('Shift')
    const range = await page.evaluate(() => window.phosphorView.selection)
    await act(() => page.keyboard.press('f'))
    out.fit_range = { range, view: await view() }
    // M marks it: the mark stays when Esc clears the selection, tinted on the ruler.
    await act(() => page.keyboard.press('m'))
    await page.keyboard.press('Escape')
    await waitIdle(page, timeout)
    out.range_cleared = await page.evaluate(() => window.phosphorView.selection)
    out.marks = await page.evaluate(() => {
      const c = document.querySelector('#ruler')
      const k = c.width / c.getBoundingClientRect().width
      // The share of the middle 40% of the ruler (below its labels) tinted orange.
      const row = c.getContext('2d').getImageData(0, Math.round(20 * k), c.width, 1).data
      let n = 0, orange = 0
      for (let x = Math.round(0.3 * c.width); x < 0.7 * c.width; x++, n++) {
        if (row[4 * x + 3] > 0 && row[4 * x] > row[4 * x + 2] + 30) orange++
      }
      return { marks: window.phosphorView.marks || null, orange: orange / n }
    })
    // Zoomed out and panned as far as the keys go: the view stays near the trace; 0 shows it all.
    for (let i = 0; i < 40; i++) await page.keyboard.press('s')
    for (let i = 0; i < 40; i++) await page.keyboard.press('d')
    await waitIdle(page, timeout)
    out.far = { span: [span.start, span.end], view: await view() }
    await show(page, span.start + 0.4 * len, span.start + 0.5 * len)
    await act(() => page.keyboard.press('0'))
    out.reset = await view()
    // A drag of a third of the screen: at once, with no answer yet, the ticker's slices (one
    // every 100 µs) are drawn across its track, in every 20 px.
    await show(page, span.start + 0.4 * len, span.start + 0.6 * len)
    const b2 = await trackBox(page, { kind: 'thread', tid: P.ticker })
    const y = b2.top + 4
    await page.mouse.move(b2.left + 0.8 * b2.width, y)
    await page.mouse.down()
    await page.mouse.move(b2.left + 0.8 * b2.width - 10, y)
    await page.mouse.move(b2.left + 0.8 * b2.width - b2.width / 3, y)
    out.drag = await page.evaluate(i => {
      const c = window.phosphorView.tracks[i].canvas
      const k = c.width / c.getBoundingClientRect().width
      const row = c.getContext('2d').getImageData(0, Math.round(4 * k), c.width, 1).data
      const seg = Math.round(20 * k)
      let blank = 0, cols = 0
      for (let x0 = 0; x0 + seg <= c.width; x0 += seg) {
        cols++
        let painted = false
        for (let x = x0; x < x0 + seg; x++) painted = painted || row[4 * x + 3] > 0
        if (!painted) blank++
      }
      return { blank, cols }
    }, b2.index)
    await page.mouse.up()
    return out
  },
  // Defect 7: tooltips, counter steps, a collapsing track, ellipses, colours, names.
  async draw(page) {
    const out = {}
    const s = P.slice
    out.labels = await page.$$eval('.track .label', ls => ls.map(l => l.textContent))
    // The tooltip of the 3 µs slice.
    await show(page, s.start - 500, s.end + 500)
    const box = await trackBox(page, { kind: 'thread', tid: s.tid })
    await page.mouse.move(await clientX(page, box, (s.start + s.end) / 2), box.top + s.level * 18 + 9)
    // (A page without tooltips fails here.)
    await page.waitForFunction(() => { const t = document.querySelector('#tip'); return t && !t.hidden && t.dataset.complete }, { timeout, polling: 50 }).catch(() => {})
    out.tip = await page.evaluate(() => { const t = document.querySelector('#tip'); return t && !t.hidden ? t.textContent : null })
    await page.mouse.move(0, 0)
    // The counter between its samples at 10 ms (value 0) and 30 ms (value 10): the stroke's rows.
    await show(page, P.span[0], P.span[1])
    const counter = await trackBox(page, { kind: 'counter' })
    out.counter = await page.evaluate((i, x) => {
      const c = window.phosphorView.tracks[i].canvas
      const k = c.width / c.getBoundingClientRect().width
      const col = c.getContext('2d').getImageData(Math.round(x * k), 0, 1, c.height).data
      const rows = []
      for (let y = 0; y < c.height; y++) if (col[4 * y + 3] > 60 && col[4 * y + 2] > col[4 * y] + 60) rows.push(y / k)
      return { rows, height: c.height / k }
    }, counter.index, await clientX(page, counter, P.counter_at) - counter.left)
    // Its tooltip there.
    await page.mouse.move(await clientX(page, counter, P.counter_at), counter.top + counter.height / 2)
    await page.waitForFunction(() => { const t = document.querySelector('#tip'); return t && !t.hidden && t.dataset.complete }, { timeout, polling: 50 }).catch(() => {})
    out.counter.tip = await page.evaluate(() => { const t = document.querySelector('#tip'); return t && !t.hidden ? t.textContent : null })
    await page.mouse.move(0, 0)
    // Collapsing the async track of many lanes, and expanding it.
    const heightOf = () => page.evaluate(() => window.phosphorView.tracks.find(t => t.kind === 'async').canvas.getBoundingClientRect().height)
    out.collapse = { before: await heightOf() }
    await page.evaluate(() => window.phosphorView.tracks.find(t => t.kind === 'async').canvas.previousElementSibling.scrollIntoView())
    const label = await page.evaluateHandle(() => window.phosphorView.tracks.find(t => t.kind === 'async').canvas.previousElementSibling)
    await label.click()
    out.collapse.collapsed = await heightOf()
    await label.click()
    out.collapse.after = await heightOf()
    // The long name, its slice about 100 px wide: drawn cut, with an ellipsis.
    const l = P.long
    const w = await page.evaluate(() => window.phosphorView.tracks[0].canvas.getBoundingClientRect().width)
    const spanNs = (l.end - l.start) * w / 100
    await show(page, l.start - spanNs / 2, l.start + spanNs / 2)
    out.long = await page.evaluate(tid => {
      const t = window.phosphorView.tracks.find(k => k.kind === 'thread' && k.tid === tid)
      return (t.canvas.texts || []).filter(x => x.text.startsWith('a_slice'))
    }, l.tid)
    // `batch` and `iteration` side by side: their colours, at the top of their boxes (no text).
    const c = P.colors
    await show(page, c.batch[0], c.batch[1])
    const tb = await trackBox(page, { kind: 'thread', tid: c.tid })
    const mid = await clientX(page, tb, (c.iteration[0] + c.iteration[1]) / 2) - tb.left
    out.colors = { batch: await pixel(page, tb.index, tb.width - 5, 3), iteration: await pixel(page, tb.index, mid, 18 + 3) }
    await page.screenshot({ path: `${shots}/draw.png` })
    return out
  },
  // Defect 7 (HiDPI): the canvases' pixels per CSS pixel, and a click still finds its slice.
  async hidpi(page) {
    const s = P.slice
    await show(page, s.start - 500, s.end + 500)
    const sizes = await page.evaluate(() => [document.querySelector('#ruler'), ...window.phosphorView.tracks.map(t => t.canvas)].map(c => {
      const r = c.getBoundingClientRect()
      return { width: c.width, height: c.height, css_width: r.width, css_height: r.height }
    }))
    await clickAndWait(page, s)
    await page.screenshot({ path: `${shots}/hidpi.png` })
    return { dpr: await page.evaluate(() => window.devicePixelRatio), sizes, clicked: (await details(page)).name }
  },
  // The URL: a window, a clicked slice and a shift-dragged range, then the URL opened in a new
  // page.
  async url(page) {
    const s = P.slice
    await show(page, s.start - 4000, s.end + 4000)
    await clickAndWait(page, s)
    const box = await trackBox(page, { kind: 'thread', tid: s.tid })
    const y = box.top + 9
    await page.keyboard.down('Shift')
    await page.mouse.move(box.left + 0.1 * box.width, y)
    await page.mouse.down()
    await page.mouse.move(box.left + 0.1 * box.width + 20, y)
    await page.mouse.move(box.left + 0.3 * box.width, y)
    await page.mouse.up()
    await page.keyboard.up('Shift')
    const seen = p => p.evaluate(() => {
      const v = window.phosphorView
      return { view: [v.view.start, v.view.end], selected: v.selected ? v.selected.index : null, selection: v.selection, name: (document.querySelector('#details h3') || {}).textContent || null }
    })
    const out = { before: await seen(page) }
    // (A page that never writes its URL fails here.)
    await page.waitForFunction(() => /slice=/.test(location.hash) && /range=/.test(location.hash), { timeout, polling: 50 }).catch(() => {})
    out.href = await page.evaluate(() => location.href)
    const other = await open(page.browser(), result.errors)
    await other.goto(out.href, { timeout, waitUntil: 'domcontentloaded' })
    await other.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
    await waitIdle(other, timeout)
    out.after = await seen(other)
    return out
  },
  // Defect 10: the span the traces make on the page, and each trace's heading.
  async placement(page) {
    return page.evaluate(() => {
      const v = window.phosphorView
      return {
        span: [v.span.start, v.span.end],
        view: [v.view.start, v.view.end],
        groups: [...document.querySelectorAll('#tracks .group')].map(g => g.textContent),
      }
    })
  },
  // Dark and light themes: the theme button, kept over a reload, and the system's preference
  // until one is chosen.
  async theme(page) {
    const read = () => page.evaluate(() => {
      const ruler = document.querySelector('#ruler')
      return {
        theme: document.documentElement.dataset.theme,
        background: getComputedStyle(document.documentElement).backgroundColor,
        label: getComputedStyle(document.querySelector('.track .label')).color,
        ruler: [...new Set((ruler.texts || []).map(t => t.color))],
      }
    })
    const reopen = async () => {
      await page.reload({ timeout, waitUntil: 'domcontentloaded' })
      await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
      await waitIdle(page, timeout)
    }
    const out = { first: await read() }
    await page.click('#theme-button')
    await waitIdle(page, timeout)
    out.dark = await read()
    await reopen()
    out.reloaded = await read()
    await page.click('#theme-button')
    await waitIdle(page, timeout)
    out.light = await read()
    // Nothing chosen, a system that prefers dark.
    await page.evaluate(() => localStorage.removeItem('phosphor-theme'))
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }])
    await reopen()
    out.system = await read()
    return out
  },
  // Defect 7 (heap): the heap track's labels.
  async heap(page) {
    return page.evaluate(() => {
      const t = window.phosphorView.tracks.find(k => k.kind === 'heap')
      return t ? (t.canvas.texts || []).map(x => x.text) : null
    })
  },
}

await runChecks(result, timeout, url, P, CHECKS)
