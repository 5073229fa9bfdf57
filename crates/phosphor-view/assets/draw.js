// Drawing the timeline's canvases: the ruler, and each track from the window its data was fetched
// for, placed in the visible window (so a pan or zoom redraws at once what is known, shifted,
// while new detail is fetched). Canvases hold devicePixelRatio pixels per CSS pixel and are drawn
// in CSS pixels (crisp on HiDPI screens); `xOf` gives CSS pixels.

import { state, $ } from './view.js'
import { fitText, formatBytes, ink, rulerTicks, sliceColor } from './format.js'
import { SYS_ROW, drawBand, hiddenPoint } from './system.js'
import { inSight, isSlices, layoutChanged, shown } from './bands.js'

export const LEVEL_HEIGHT = 18
export const POINT_ROW = 12
export const FLAG_UNCLOSED = 4
export const FLAG_WRONG_END = 8
export const FLAG_INTERLACED = 16

// A canvas's width in CSS pixels (set by `sizeCanvas`).
export const cssWidth = c => c.cssWidth || c.width

export const xOf = (canvas, t) => (t - state.view.start) / (state.view.end - state.view.start) * cssWidth(canvas)

// Sizes `c` to `width` × `height` CSS pixels, at the screen's pixel ratio.
export function sizeCanvas(c, width, height) {
  const dpr = window.devicePixelRatio || 1
  c.cssWidth = Math.max(1, Math.floor(width))
  c.cssHeight = height
  const w = Math.round(c.cssWidth * dpr), h = Math.round(height * dpr)
  // (A canvas sized anew is blank: it shows no view; one of another height moves those below.)
  if (c.width !== w || c.height !== h) c.shownView = null
  if (c.height !== h) layoutChanged()
  if (c.width !== w) c.width = w
  if (c.height !== h) c.height = h
  c.style.height = `${height}px`
}

// A cleared 2D context of `c` whose units are CSS pixels.
export function context(c) {
  const g = c.getContext('2d')
  const k = c.width / cssWidth(c)
  g.setTransform(k, 0, 0, k, 0, 0)
  g.clearRect(0, 0, cssWidth(c), c.cssHeight || c.height)
  return g
}

// A track's height when collapsed: one level (all its levels drawn on it), points, system band.
export function trackHeight(track) {
  const levels = track.collapsed ? 1 : Math.max(1, track.levels)
  return levels * LEVEL_HEIGHT + (track.points ? POINT_ROW : 0) + (track.sys ? SYS_ROW : 0)
}

// A track drawn again whole, at once (a click, a collapse, a theme or a search changed), if it is
// in sight; out of sight it is left as it is, and drawn when it scrolls in (frames.js).
export function draw(track) {
  if (inSight(track)) paint(track)
}

// A track drawn whole, in sight or not.
export function paint(track) {
  const c = track.canvas
  const g = context(c)
  track.drawn = 0
  let r = null
  if (track.data) {
    if (track.kind === 'coarse') drawCoarse(track, g)
    else if (isSlices(track)) {
      r = drawThread(track, g)
      track.drawn = r.drawn
      if (r.log) track.drawLog = r.log
    } else drawCounter(track, g)
  }
  drawMarks(c, g)
  shown(track, r)
}

// The marked ranges (`m`) over a canvas: a tint between two lines.
export function drawMarks(c, g) {
  const h = c.cssHeight || c.height
  for (const [a, b] of state.marks) {
    const x0 = xOf(c, a), x1 = Math.max(xOf(c, b), x0 + 1)
    if (x1 < 0 || x0 > cssWidth(c)) continue
    g.fillStyle = 'rgba(255, 160, 0, 0.15)'
    g.fillRect(x0, 0, x1 - x0, h)
    g.fillStyle = 'rgba(220, 120, 0, 0.9)'
    g.fillRect(x0, 0, 1, h)
    g.fillRect(x1 - 1, 0, 1, h)
  }
}

// Events per pixel as bars, on a log scale (the window they were asked for, placed in the view).
function drawCoarse(track, g) {
  const c = track.canvas
  const events = track.data.events
  if (!events.length) return
  const top = Math.log1p(Math.max(...events))
  if (!(top > 0)) return
  const per = (track.window.end - track.window.start) / events.length
  const h0 = c.cssHeight
  g.fillStyle = ink.muted
  events.forEach((n, i) => {
    if (!(n > 0)) return
    const x0 = xOf(c, track.window.start + i * per)
    const x1 = xOf(c, track.window.start + (i + 1) * per)
    const h = Math.max(1, Math.log1p(n) / top * (h0 - 4))
    g.fillRect(x0, h0 - 2 - h, Math.max(1, x1 - x0), h)
  })
}

// Where an item of a level is drawn: from x0 to x1 on `canvas` (at least a pixel wide).
export function extent(canvas, it) {
  const x0 = Math.max(-1, xOf(canvas, it[0]))
  return [x0, Math.min(cssWidth(canvas) + 1, Math.max(xOf(canvas, it[1]), x0 + 1))]
}

// The top of level `level` of `track` (a collapsed track draws every level on its first row).
export const levelTop = (track, level) => (track.collapsed ? 0 : level * LEVEL_HEIGHT)

const LABEL_FONT = '11px system-ui, sans-serif'
// Names' widths in LABEL_FONT (`fitText`).
const labelWidths = new Map()

// With `?drawlog` in the page's address, each thread or async track keeps what its last redraw
// drew in `track.drawLog` (tests read it): per item, [kind ('slice' or 'run'), level, start, end,
// name, index (of a slice; the first of a run), x0, x1, label drawn ('' for none), count].
export const drawLog = new URLSearchParams(location.search).has('drawlog')

// A run's fill: its dominant name's colour, paler, hatched with grey lines, so that a run is told
// from a slice of that name (one pattern a colour, made once).
const runFills = new Map()
function runFill(g, name) {
  const base = sliceColor(name)
  let p = runFills.get(base)
  if (p) return p
  const tile = document.createElement('canvas')
  tile.width = tile.height = 6
  const t = tile.getContext('2d')
  t.fillStyle = base
  t.fillRect(0, 0, 6, 6)
  t.fillStyle = 'rgba(255, 255, 255, 0.45)'
  t.fillRect(0, 0, 6, 6)
  t.strokeStyle = 'rgba(70, 75, 85, 0.55)'
  t.lineWidth = 1
  t.beginPath()
  t.moveTo(-1, 7)
  t.lineTo(7, -1)
  t.moveTo(5, 7)
  t.lineTo(7, 5)
  t.moveTo(-1, 1)
  t.lineTo(1, -1)
  t.stroke()
  p = g.createPattern(tile, 'repeat')
  if (runFills.size >= 64) runFills.clear()
  runFills.set(base, p)
  return p
}

// What a run of narrow slices says of itself (its label and tooltip): how many it holds, and its
// dominant name. (One number format made once: `toLocaleString` makes one a call, some 10 µs.)
const COUNT = new Intl.NumberFormat('en')
export const runText = (count, name) => `${COUNT.format(count)} slices, mostly ${name || '?'}`

// `fitText`'s cut of a name to `room`, with each cut's width measured once a name (a pan draws
// the same labels frame after frame; `fitText` measures its cuts again each time).
const cutWidths = new Map()
function fitted(g, text, room) {
  const full = labelWidths.get(text)
  if (full === undefined) return fitText(g, text, room, labelWidths)
  if (full <= room) return text
  let cuts = cutWidths.get(text)
  if (!cuts) {
    if (cutWidths.size >= 5000) cutWidths.clear()
    cutWidths.set(text, cuts = [])
  }
  const w = n => cuts[n] ?? (cuts[n] = g.measureText(text.slice(0, n) + '…').width)
  let n = Math.min(text.length - 1, Math.floor(text.length * room / full))
  while (n > 0 && w(n) > room) n--
  return n === 0 ? '' : text.slice(0, n) + '…'
}

// A label (`text`, or `text()`: made only when there is room) fitted into the part of [x0, x1] on
// screen (3 px margins), drawn; the text drawn.
function label(g, text, x0, x1, width, y, fill) {
  const left = Math.max(x0, 0), right = Math.min(x1, width)
  if (right - left <= 8) return ''
  const t = typeof text === 'function' ? text() : text
  const f = fitted(g, t, right - left - 6)
  if (f) {
    g.fillStyle = fill
    g.fillText(f, left + 3, y + LEVEL_HEIGHT / 2)
  }
  return f
}

// A run's label, whole, in the part of [x0, x1] on screen: what it holds ("N slices, mostly
// NAME"), else "N slices", else "N", else nothing (never a cut: a fragment such as "2…" on every
// narrow run says nothing). The text drawn.
const runWidths = new Map()
function runLabel(g, count, name, x0, x1, width, y) {
  const room = Math.min(x1, width) - Math.max(x0, 0) - 6
  if (room <= 2) return ''
  const n = COUNT.format(count)
  for (const t of [runText(count, name), `${n} slices`, n]) {
    let w = runWidths.get(t)
    if (w === undefined) {
      w = g.measureText(t).width
      if (runWidths.size >= 10000) runWidths.clear()
      runWidths.set(t, w)
    }
    if (w <= room) {
      g.fillStyle = '#333'
      g.fillText(t, Math.max(x0, 0) + 3, y + LEVEL_HEIGHT / 2)
      return t
    }
  }
  return ''
}

// A thread's (or async track's) levels, then its points. Runs of narrow slices first, each in its
// dominant name's colour, paler and hatched, then the slices; the items to click are found again
// from the data (`hitAt`), so a redraw makes no object per item. Names are cut with an ellipsis
// to fit their slice.
//
// Only what is on screen is drawn (the data's window is wider than the view), or within `clip`
// ([x0, x1) in CSS pixels: a strip of a moving frame, not logged), and at most one item narrower
// than a pixel per pixel column of a level (the next ones would cover the same column); an item a
// pixel wide or more is always drawn by itself with its label.
//
// `from` and `to` are the levels drawn (all unless given), `rest` whether the points and the
// system band are (one band of the track's bitmap: bands.js); the search's ticks are drawn in
// `rows` ([top, bottom) in CSS pixels). Gives the items drawn, by level (`counts`; the points and
// band's as `rest`), and with `?drawlog` what each level drew (`logs`, by level; `log`, all of them).
export function drawThread(track, g, { clip = null, data = track.data, from = 0, to = Infinity, rest = true, rows = null } = {}) {
  const c = track.canvas
  const { slices, points } = data
  const width = cssWidth(c)
  const lo = clip ? clip[0] : 0, hi = clip ? clip[1] : width
  // `extent`, with the canvas's width and the view read once (tens of thousands of items).
  const v0 = state.view.start, k = width / (state.view.end - state.view.start)
  const x0Of = it => Math.max(-1, (it[0] - v0) * k)
  const x1Of = (it, x0) => Math.min(width + 1, Math.max((it[1] - v0) * k, x0 + 1))
  g.font = LABEL_FONT
  g.textBaseline = 'middle'
  const logs = drawLog && !clip ? [] : null
  const counts = []
  const sel = state.selected && state.selected.trace === track.trace ? state.selected.index : null
  // The fill last set: a colour is set again only when it changes.
  let fill = null
  const setFill = f => {
    if (f !== fill) g.fillStyle = fill = f
  }
  const labelFill = (text, x0, x1, y, ink) => {
    const t = label(g, text, x0, x1, width, y, ink)
    if (t) fill = ink
    return t
  }
  const first = Math.max(0, from - slices.from), last = Math.min(slices.levels.length, to - slices.from)
  // The times a pixel beyond [lo, hi]: items outside are not looked at.
  const t0 = v0 + (lo - 1) / k, t1 = v0 + (hi + 1) / k
  for (let i = first; i < last; i++) {
    const items = slices.levels[i]
    const [a, z] = meeting(items, t0, t1)
    const level = slices.from + i
    const y = levelTop(track, level)
    const log = logs ? [] : null
    let drawn = 0
    // The pixel column of the last narrow item drawn on this level.
    let column = -Infinity
    for (let n = a; n < z; n++) {
      const it = items[n]
      if (it[2] >= 0) continue
      const r0 = (it[0] - v0) * k, r1 = (it[1] - v0) * k
      if (r1 < lo || r0 > hi) continue
      if (r1 - r0 < 1) {
        if (Math.floor(r0) === column) continue
        column = Math.floor(r0)
      }
      const x0 = x0Of(it), x1 = x1Of(it, x0)
      const name = it.length > 4 ? slices.names[it[4]] ?? '' : ''
      setFill(runFill(g, name))
      g.fillRect(x0, y + 1, x1 - x0, LEVEL_HEIGHT - 2)
      const text = x1 - x0 > 8 ? runLabel(g, -it[2], name, x0, x1, width, y) : ''
      if (text) fill = '#333'
      if (log) log.push(['run', level, it[0], it[1], name, it[3], x0, x1, text, -it[2]])
      drawn++
    }
    column = -Infinity
    for (let n = a; n < z; n++) {
      const it = items[n]
      if (it[2] < 0) continue
      const r0 = (it[0] - v0) * k, r1 = (it[1] - v0) * k
      if (r1 < lo || r0 > hi) continue
      if (r1 - r0 < 1 && sel !== it[3]) {
        if (Math.floor(r0) === column) continue
        column = Math.floor(r0)
      }
      const x0 = x0Of(it), x1 = x1Of(it, x0)
      const name = slices.names[it[2]] ?? ''
      const flags = it[4]
      setFill(sliceColor(name))
      g.fillRect(x0, y + 1, x1 - x0, LEVEL_HEIGHT - 2)
      if (flags & (FLAG_WRONG_END | FLAG_INTERLACED | FLAG_UNCLOSED)) {
        g.strokeStyle = '#c00'
        g.lineWidth = 2
        g.strokeRect(x0 + 1, y + 2, Math.max(1, x1 - x0 - 2), LEVEL_HEIGHT - 4)
      }
      if (sel === it[3]) {
        g.strokeStyle = '#000'
        g.lineWidth = 2
        g.strokeRect(x0, y + 1, x1 - x0, LEVEL_HEIGHT - 2)
      }
      // The label where the slice is on screen, cut to it.
      const text = x1 - x0 > 8 ? labelFill(name, x0, x1, y, '#111') : ''
      if (log) log.push(['slice', level, it[0], it[1], name, it[3], x0, x1, text, 1])
      drawn++
    }
    counts[level] = drawn
    if (logs) logs[level] = log
  }
  drawHits(track, g, x0Of, x1Of, rows)
  fill = null
  let more = 0
  if (points && rest) {
    const y = track.height - POINT_ROW - (track.sys ? SYS_ROW : 0)
    // One mark a pixel column and colour; the marks of one colour in a row filled as one path (a
    // fill each costs some 20 µs: thousands of points).
    let column = -Infinity, last = null
    const flush = () => {
      if (last === null) return
      setFill(last)
      g.fill()
    }
    for (const p of points.points) {
      const x = (p[0] - v0) * k
      if (x < lo - 4 || x > hi + 4) continue
      if (p[2] >= 0 && hiddenPoint(track.trace, points.names[p[1]])) continue
      const mark = ink.points[p[2] < 0 ? 0 : p[3]] || ink.points[0]
      if (Math.floor(x) === column && mark === last) continue
      if (mark !== last) {
        flush()
        g.beginPath()
      }
      column = Math.floor(x)
      last = mark
      more++
      g.moveTo(x, y + 1)
      g.lineTo(x - 4, y + POINT_ROW - 1)
      g.lineTo(x + 4, y + POINT_ROW - 1)
      g.closePath()
    }
    flush()
  }
  if (track.sys && rest) more += drawBand(track, g, xOf)
  let drawn = more
  for (const n of counts) drawn += n || 0
  return { drawn, counts, rest: more, logs, log: logs ? logs.flat() : null }
}

// The greatest end of a level's items up to each one (their starts in order), made once a level;
// null where the starts are out of order.
const greatestEnds = new WeakMap()

// The items of a level that may meet [t0, t1]: [first, last) of its indices, found by a binary
// search (a pan's strip looks at a few of thousands), or all of them if their starts are out of
// order.
function meeting(items, t0, t1) {
  let ends = greatestEnds.get(items)
  if (ends === undefined) {
    ends = new Float64Array(items.length)
    let top = -Infinity
    for (let n = 0; n < items.length; n++) {
      if (n && items[n][0] < items[n - 1][0]) {
        ends = null
        break
      }
      ends[n] = top = Math.max(top, items[n][1])
    }
    greatestEnds.set(items, ends)
  }
  if (!ends) return [0, items.length]
  // The first whose greatest end so far reaches t0; the first that starts after t1.
  let a = 0, b = items.length
  while (a < b) {
    const m = (a + b) >> 1
    if (ends[m] < t0) a = m + 1
    else b = m
  }
  let z = items.length
  for (let lo = a; lo < z;) {
    const m = (lo + z) >> 1
    if (items[m][0] > t1) z = m
    else lo = m + 1
  }
  return [a, z]
}

// The search's hits on a track, each in view marked: a tick over its start and a bar along its top.
// Every hit in the window when the server gave its columns (`state.search.window`), else the
// listed hits (`state.search.byTrack`; from panels.js). Those of `rows` ([top, bottom)) drawn,
// all counted.
function drawHits(track, g, x0Of, x1Of, rows) {
  const s = state.search
  const key = track.kind === 'async' ? `${track.trace}/a${track.async}` : `${track.trace}/${track.tid}`
  const width = cssWidth(track.canvas)
  const yOf = (kind, level) => (kind === 'point' ? track.height - POINT_ROW - (track.sys ? SYS_ROW : 0) : levelTop(track, level))
  let n = 0, last = -1
  g.fillStyle = '#e0007a'
  const tick = (t0, t1, y) => {
    const x0 = x0Of([t0]), x1 = x1Of([t0, t1], x0)
    if (x1 < 0 || x0 > width) return
    n++
    last = Math.max(last, x1)
    if (rows && (y < rows[0] || y >= rows[1])) return
    g.fillRect(x0, y, Math.max(2, x1 - x0), 3)
    g.beginPath()
    g.moveTo(x0 - 4, y)
    g.lineTo(x0 + 4, y)
    g.lineTo(x0, y + 6)
    g.fill()
  }
  const w = s && s.window
  if (w) {
    const per = (w.end - w.start) / w.px
    for (const t of w.by.get(key) || []) {
      for (const [c0, c1] of t.runs) tick(w.start + c0 * per, w.start + (c1 + 1) * per, yOf(t.kind, t.level))
    }
  } else {
    for (const h of (s && s.byTrack && s.byTrack.get(key)) || []) tick(h.start_ns, h.end_ns, yOf(h.kind, h.level))
  }
  track.canvas.dataset.searchTicks = String(n)
  track.canvas.dataset.searchTickLast = String(Math.round(last))
}

// A counter as steps: each value holds until the next sample. A pixel of several samples also
// shows their range. The heap's values are bytes.
function drawCounter(track, g) {
  const c = track.canvas
  const items = track.data.samples.samples
  if (!items.length) return
  const num = v => (typeof v === 'number' ? v : NaN)
  let lo = Infinity, hi = -Infinity
  for (const s of items) {
    if (Number.isFinite(num(s[3]))) lo = Math.min(lo, num(s[3]))
    if (Number.isFinite(num(s[4]))) hi = Math.max(hi, num(s[4]))
  }
  if (!(hi >= lo)) return
  const h = c.cssHeight
  const yOf = v => h - 3 - (hi === lo ? 0.5 : (v - lo) / (hi - lo)) * (h - 6)
  g.strokeStyle = '#2a6fb0'
  g.fillStyle = 'rgba(42, 111, 176, 0.35)'
  g.lineWidth = 1
  g.beginPath()
  let prev = null
  for (const s of items) {
    const x = xOf(c, s[0])
    const x1 = xOf(c, s[1])
    if (s[2] > 1) g.fillRect(x, yOf(num(s[4])), Math.max(1, x1 - x), Math.max(1, yOf(num(s[3])) - yOf(num(s[4]))))
    const y = yOf(num(s[5]))
    if (prev === null) g.moveTo(x, y)
    else {
      g.lineTo(x, prev)
      g.lineTo(x, y)
    }
    g.lineTo(Math.max(x, x1), y)
    prev = y
  }
  g.lineTo(cssWidth(c), prev)
  g.stroke()
  const text = v => (track.kind === 'heap' ? formatBytes(v) : String(v))
  g.fillStyle = ink.text
  g.font = '11px system-ui, sans-serif'
  g.textBaseline = 'alphabetic'
  g.fillText(text(hi), 4, 10)
  g.fillText(text(lo), 4, h - 4)
}

// Ticks labelled from the start of the traces, as precise as their step (`rulerTicks`), then the
// selected range. The ruler is as wide as the tracks (its row leaves room for their scrollbar).
export function drawRuler() {
  const c = $('ruler')
  const g = context(c)
  const r = rulerTicks(state.view.start, state.view.end, state.span.start, cssWidth(c))
  g.font = '11px system-ui, sans-serif'
  g.textBaseline = 'alphabetic'
  let from = 0
  if (r.offset) {
    from = g.measureText(r.offset.label).width + 12
    g.fillStyle = '#1d2330'
    g.fillRect(0, 0, from - 4, 15)
    g.fillStyle = '#fff'
    g.fillText(r.offset.label, 4, 11)
  }
  g.fillStyle = ink.text
  const right = cssWidth(c)
  for (const tick of r.ticks) {
    const x = xOf(c, tick.t)
    g.fillRect(x, 14, 1, 10)
    // A label that the offset's box or the right edge would cut is left out.
    if (x + 3 >= from && x + 3 + g.measureText(tick.label).width <= right) g.fillText(tick.label, x + 3, 11)
  }
  const offset = r.offset ? r.offset.label : ''
  if (c.dataset.offset !== offset) c.dataset.offset = offset
  if (state.selection) {
    const [a, b] = state.selection
    g.fillStyle = 'rgba(40, 90, 200, 0.25)'
    g.fillRect(xOf(c, a), 0, xOf(c, b) - xOf(c, a), c.cssHeight || c.height)
  }
  drawMarks(c, g)
}
