// A thread's or async track's picture, kept in a bitmap of bands of rows: a band a level, and one
// for the points and the system band below the levels (a collapsed track is one band). Each band
// keeps what it was drawn from, its stamp: the view, the data, and what else a redraw depends on
// (`drawnWith`). A frame of a pan or zoom moves and scales each band's picture to the view and
// draws the edges it leaves uncovered (`compose`, as Perfetto and Tracy move their last frame);
// new data is drawn a band at a time (`drawBands`), so that frames.js spreads a tall track over
// frames within a budget; a band's picture goes to the canvas and to the bitmap at once.
//
// Only the rows in sight (the part of the tracks' scrolled box shown) are drawn: the others when
// they scroll in.

import { state } from './view.js'
import { LEVEL_HEIGHT, cssWidth, drawLog, drawMarks, drawThread } from './draw.js'
import { ink } from './format.js'

export const isSlices = track => track.kind === 'thread' || track.kind === 'async'

// What a redraw depends on besides the view and the data: a change of any redraws it.
export const drawnWith = () => {
  const s = state.search || {}
  return [state.selected, s.asked, s.window, s.byTrack, s.at, state.marks.map(m => m.join()).join(), ink.text]
}

const same = (x, y) => !!x && !!y && x.length === y.length && x.every((e, i) => e === y[i])
const sameView = v => !!v && v.start === state.view.start && v.end === state.view.end

// The rows of the tracks' box in sight ([top, bottom) in CSS pixels of its content) and where each
// track's canvas is in it: read once until the layout changes (`layoutChanged`), since a read of
// them makes the browser lay the page out first if anything changed (a pan changes a text).
let geometry = null
export function sight() {
  if (!geometry) geometry = measure()
  return geometry
}

// The geometry as it is now (not kept).
export function measure() {
  const root = document.getElementById('tracks')
  const g = [root.scrollTop, root.scrollTop + root.clientHeight]
  g.tops = new Map()
  return g
}

// The tracks were scrolled, resized or moved: their geometry is read again.
export function layoutChanged() {
  geometry = null
}

// The rows of `track` in sight: [top, bottom) in CSS pixels of its canvas, empty when top >= bottom.
export function rowsInSight(track, s = sight()) {
  let top = s.tops.get(track.canvas)
  if (top === undefined) s.tops.set(track.canvas, (top = track.canvas.offsetTop))
  return [Math.max(0, s[0] - top), Math.min(track.height, s[1] - top)]
}

export function inSight(track, s) {
  const r = rowsInSight(track, s)
  return r[0] < r[1]
}

// The stamp of a picture drawn now: the same object while the view, the data and `drawnWith` are
// (so that bands drawn in different frames of the same picture compare equal).
function stampOf(track) {
  const s = track.stamp
  if (s && s.data === track.data && sameView(s.view) && same(s.with, drawnWith())) return s
  return (track.stamp = { view: { ...state.view }, data: track.data, with: drawnWith() })
}

// The bands of `track`: [top, bottom) in CSS pixels, the levels they draw [from, to), and whether
// they draw the points and the system band (`rest`).
function bandsOf(track) {
  const band = (top, bottom, from, to, rest) => ({ top, bottom, from, to, rest, stamp: null, drawn: 0, log: null, redo: false, ms: 0 })
  if (track.collapsed) return [band(0, track.height, 0, Infinity, true)]
  const out = []
  for (let l = 0; l < track.levels; l++) out.push(band(l * LEVEL_HEIGHT, (l + 1) * LEVEL_HEIGHT, l, l + 1, false))
  const top = track.levels * LEVEL_HEIGHT
  if (track.height > top) out.push(band(top, track.height, track.levels, track.levels, true))
  return out
}

// The bitmap of `track` and its bands, made again (empty) when its size or levels changed.
function bitmapOf(track) {
  const c = track.canvas
  let b = track.bitmap
  if (!b) b = track.bitmap = { canvas: document.createElement('canvas'), layout: null }
  const layout = `${c.width}x${c.height}/${track.levels}/${track.collapsed}/${track.height}`
  if (b.layout !== layout) {
    // (Setting the size clears the bitmap, even to the same size.)
    b.canvas.width = c.width
    b.canvas.height = c.height
    b.layout = layout
    b.bands = bandsOf(track)
  }
  return b
}

// Whether `band` must be drawn again: never drawn, its data or what it depends on changed, or it
// came into sight drawn at another view (`redo`). At another view alone it is not: a moving frame
// moves it until the new view's answers come.
const needs = (band, st) => band.redo || !band.stamp || band.stamp.data !== st.data || !same(band.stamp.with, st.with)

// Whether the canvas of `track` shows the view in all its rows in sight (moved there or drawn).
export function shows(track, s) {
  const c = track.canvas
  const rows = rowsInSight(track, s)
  return sameView(c.shownView) && (!isSlices(track) || (!!c.seen && c.seen[0] <= rows[0] && c.seen[1] >= rows[1]))
}

// Whether what `track` shows in sight is drawn from its data at the view (`strict`: every band in
// sight drawn at this very view, not moved there).
export function upToDate(track, s, strict) {
  const rows = rowsInSight(track, s)
  if (rows[0] >= rows[1] || !track.data) return true
  if (!shows(track, s)) return false
  const c = track.canvas
  if (!isSlices(track)) return c.shownData === track.data && same(c.shownWith, drawnWith())
  const st = stampOf(track)
  return bitmapOf(track).bands.every(band => band.bottom <= rows[0] || band.top >= rows[1] || (strict ? band.stamp === st : !needs(band, st)))
}

// After a whole redraw (draw.js's `draw`) of `track`, `r` what `drawThread` gave: the canvas is
// its bitmap, every band drawn now.
export function shown(track, r) {
  const c = track.canvas
  c.shownView = { ...state.view }
  c.shownData = track.data
  c.shownWith = drawnWith()
  if (!isSlices(track)) return
  c.seen = [0, track.height]
  const b = bitmapOf(track)
  const g = b.canvas.getContext('2d')
  g.clearRect(0, 0, b.canvas.width, b.canvas.height)
  g.drawImage(c, 0, 0)
  const st = track.data ? stampOf(track) : null
  for (const band of b.bands) {
    band.stamp = st
    band.redo = false
    if (r) keepCounts(band, r)
    else {
      band.drawn = 0
      band.log = []
    }
  }
}

// A frame of a move: each band's picture moved and scaled to the view, and the edges it leaves
// uncovered (a pan's newly exposed strip) drawn from its own data; only the rows in sight (the
// others are left as they are, and moved when they come into sight).
export function compose(track, s) {
  const c = track.canvas
  const b = bitmapOf(track)
  const rows = rowsInSight(track, s)
  const width = cssWidth(c)
  const v = state.view
  const k = width / (v.end - v.start)
  const dpr = c.width / width
  const g = c.getContext('2d')
  g.setTransform(dpr, 0, 0, dpr, 0, 0)
  g.clearRect(0, rows[0], width, rows[1] - rows[0])
  const bands = b.bands
  for (let i = 0, j; i < bands.length; i = j) {
    // A run of bands of one stamp is moved at once (usually all those in sight).
    const st = bands[i].stamp
    for (j = i + 1; j < bands.length && bands[j].stamp === st;) j++
    const r0 = Math.max(bands[i].top, rows[0]), r1 = Math.min(bands[j - 1].bottom, rows[1])
    if (!st || r1 <= r0) continue
    // (At the view it was drawn at, copied as it is: no scaling by a rounding error.)
    const here = sameView(st.view)
    const x0 = here ? 0 : (st.view.start - v.start) * k, x1 = here ? width : (st.view.end - v.start) * k
    g.drawImage(b.canvas, 0, r0 * dpr, b.canvas.width, (r1 - r0) * dpr, x0, r0, x1 - x0, r1 - r0)
    if (!st.data) continue
    for (const [a, z] of [[0, Math.min(width, Math.ceil(x0))], [Math.max(0, Math.floor(x1)), width]]) {
      if (z - a < 0.5) continue
      g.save()
      g.beginPath()
      g.rect(a, r0, z - a, r1 - r0)
      g.clip()
      drawThread(track, g, { clip: [a, z], data: st.data, from: bands[i].from, to: bands[j - 1].to, rest: bands[j - 1].rest, rows: [r0, r1] })
      drawMarks(c, g)
      g.restore()
    }
  }
  c.shownView = { ...v }
  c.seen = rows
}

// Whether a band of `track` in sight must be drawn. With `redo`, those drawn at another view
// than this one (moved here) must be too: a track come into sight after a move, when no answer is
// on its way to replace its data.
export function stale(track, s, redo) {
  const rows = rowsInSight(track, s)
  if (rows[0] >= rows[1] || !track.data) return false
  const st = stampOf(track)
  let any = false
  for (const band of bitmapOf(track).bands) {
    if (band.bottom <= rows[0] || band.top >= rows[1]) continue
    if (redo && band.stamp !== st) band.redo = true
    any = any || needs(band, st)
  }
  return any
}

// Draws the bands of `track` in sight that need it, from the top, while `budget.deadline`
// (performance.now()) is not past, or until one band was drawn this frame (`budget.done`, counted
// across tracks); adjacent bands are drawn in one pass while their last drawings' times fit. Gives
// whether none is left to draw.
export function drawBands(track, budget, s) {
  const rows = rowsInSight(track, s)
  if (!track.data) return true
  // The canvas shows the view in sight before a band is drawn over it.
  if (!shows(track, s)) compose(track, s)
  const b = bitmapOf(track)
  const st = stampOf(track)
  const bands = b.bands
  const due = band => band.bottom > rows[0] && band.top < rows[1] && needs(band, st)
  // (A band not drawn yet is reckoned at half a millisecond.)
  const cost = band => band.ms || 0.5
  for (let i = 0; i < bands.length; i++) {
    if (!due(bands[i])) continue
    const now = performance.now()
    let est = cost(bands[i])
    if (budget.done && now + est > budget.deadline) return false
    let j = i + 1
    for (; j < bands.length && due(bands[j]) && now + est + cost(bands[j]) <= budget.deadline; j++) est += cost(bands[j])
    drawRun(track, b, bands.slice(i, j), st)
    const each = (performance.now() - now) / (j - i)
    for (let k = i; k < j; k++) bands[k].ms = each
    budget.done += j - i
    i = j - 1
  }
  return true
}

// Adjacent bands `run` of `track` drawn at the view from its data in one pass, on the canvas
// (cleared and clipped to them) and copied to the bitmap.
function drawRun(track, b, run, st) {
  const c = track.canvas
  const width = cssWidth(c)
  const top = run[0].top, last = run[run.length - 1], h = last.bottom - top
  const dpr = c.width / width
  const g = c.getContext('2d')
  g.setTransform(dpr, 0, 0, dpr, 0, 0)
  g.save()
  g.beginPath()
  g.rect(0, top, width, h)
  g.clip()
  g.clearRect(0, top, width, h)
  const r = drawThread(track, g, { from: run[0].from, to: last.to, rest: last.rest, rows: [top, last.bottom] })
  drawMarks(c, g)
  g.restore()
  const bg = b.canvas.getContext('2d')
  bg.clearRect(0, top * dpr, b.canvas.width, h * dpr)
  bg.drawImage(c, 0, top * dpr, c.width, h * dpr, 0, top * dpr, c.width, h * dpr)
  for (const band of run) {
    band.stamp = st
    band.redo = false
    keepCounts(band, r)
  }
  track.drawn = b.bands.reduce((n, x) => n + x.drawn, 0)
  if (drawLog) track.drawLog = b.bands.flatMap(x => x.log || [])
}

// What `band` drew, from what `drawThread` gave for it and others: the items of its levels (and
// of the points and system band if it has them), and their log.
function keepCounts(band, r) {
  band.drawn = 0
  band.log = []
  const last = Math.min(band.to, r.counts.length)
  for (let l = band.from; l < last; l++) {
    band.drawn += r.counts[l] || 0
    if (r.logs && r.logs[l]) band.log.push(...r.logs[l])
  }
  if (band.rest) band.drawn += r.rest
}
