// The frame track (`trace_frame!`; `/api/frames`: src/frame_track.rs): above the tracks, a row per
// frame set of each trace, one bar per frame as wide as its time, the slow ones (the set's
// slowest 1%, at or over its p99, or over a 60 Hz budget) in red. Hovering a bar says its number
// and duration; clicking it shows that frame's interval. Fetched per window at the row's width,
// as the tracks are: the server merges frames narrower than a pixel into runs (drawn in the
// colour of their longest).

import { state, api, formatNs } from './view.js'

// A frame longer than this misses 60 Hz.
export const BUDGET_NS = 16_666_667
const HEIGHT = 20
const SLOW = '#d03b3b'
const FAST = '#4a9a5a'

// What the rows show (tests read it): `rows` ({ trace, name, count, p99_ns, frames }), the
// window their frames were fetched for, and how many answers came.
// (Set on `state` when started: view.js imports this module before its `state` exists.)
const track = { rows: [], view: null, answered: 0 }
let timer = null
let abort = null

const root = () => document.getElementById('frame-tracks')

// Whether a frame (or a run whose longest frame) lasting `dur` ns is slow: over the budget, or
// among the set's slowest 1% (at least its p99, and longer than its median, so that a set of
// equal frames has none).
export function slow(row, dur) {
  return dur > BUDGET_NS || (dur >= row.p99_ns && dur > row.p50_ns)
}

// An entry's [start, end, duration or longest, first number, count].
function span(e) {
  return e.length === 3 ? [e[0], e[0] + e[1], e[1], e[2], 1] : [e[0], e[1], e[4], e[3], -e[2]]
}

function draw(row) {
  const c = row.canvas
  const w = c.clientWidth
  const dpr = window.devicePixelRatio || 1
  if (c.width !== Math.round(w * dpr)) c.width = Math.round(w * dpr)
  c.height = Math.round(HEIGHT * dpr)
  const g = c.getContext('2d')
  g.setTransform(dpr, 0, 0, dpr, 0, 0)
  g.clearRect(0, 0, w, HEIGHT)
  const { start, end } = state.view
  const k = w / (end - start)
  for (const e of row.frames) {
    const [s, t, dur] = span(e)
    const x0 = (s - start) * k
    const x1 = (t - start) * k
    if (x1 < 0 || x0 > w) continue
    // A pixel's gap between frames wide enough to show it.
    const gap = x1 - x0 > 4 ? 1 : 0
    g.fillStyle = slow(row, dur) ? SLOW : FAST
    g.fillRect(x0, 3, Math.max(1, x1 - x0 - gap), HEIGHT - 6)
  }
}

// The entry of `row` under the mouse event `ev`, if any.
function hit(row, ev) {
  const r = row.canvas.getBoundingClientRect()
  const { start, end } = state.view
  const at = start + (ev.clientX - r.left) / r.width * (end - start)
  // Within a pixel's time, for a narrow frame.
  const slack = (end - start) / r.width
  let best = null
  for (const e of row.frames) {
    const [s, t] = span(e)
    if (at >= s - slack && at <= t + slack) {
      if (at >= s && at < t) return e
      best = best || e
    }
  }
  return best
}

// What hovering entry `e` of `row` says.
export function tipText(row, e) {
  const [, , dur, first, count] = span(e)
  const flag = slow(row, dur) ? ' (slow)' : ''
  if (count === 1) return `${row.name} ${first}: ${formatNs(dur)}${flag}`
  return `${row.name} ${first}–${first + count - 1} (${count} frames): longest ${formatNs(dur)}${flag}`
}

function listenRow(row, tip) {
  const c = row.canvas
  c.addEventListener('mousemove', ev => {
    const e = hit(row, ev)
    tip.hidden = !e
    if (!e) return
    tip.textContent = tipText(row, e)
    tip.style.left = `${Math.min(ev.pageX + 14, window.innerWidth - 320)}px`
    tip.style.top = `${ev.pageY + 14}px`
  })
  c.addEventListener('mouseleave', () => { tip.hidden = true })
  c.addEventListener('click', ev => {
    const e = hit(row, ev)
    if (!e) return
    const [s, t] = span(e)
    tip.hidden = true
    state.show(s, t)
  })
}

function build(sets) {
  const el = root()
  el.textContent = ''
  let tip = document.getElementById('frame-tip')
  if (!tip) {
    tip = document.createElement('div')
    tip.id = 'frame-tip'
    tip.className = 'frame-tip'
    tip.hidden = true
    document.body.appendChild(tip)
  }
  track.rows = sets.map(({ trace, set }) => {
    const line = document.createElement('div')
    line.className = 'frame-row'
    const label = document.createElement('div')
    label.className = 'label'
    label.textContent = set.name
    label.title = `${set.name}: ${set.count.toLocaleString('en')} frames · p50 ${formatNs(set.p50_ns)} · p99 ${formatNs(set.p99_ns)} · max ${formatNs(set.max_ns)}; red: the slowest 1% (at least the p99) or over ${formatNs(BUDGET_NS)}; click a frame to zoom to it`
    const canvas = document.createElement('canvas')
    canvas.dataset.trace = trace
    canvas.dataset.set = set.name
    line.append(label, canvas)
    el.appendChild(line)
    const row = { trace, name: set.name, count: set.count, p50_ns: set.p50_ns, p99_ns: set.p99_ns, max_ns: set.max_ns, frames: set.frames, canvas }
    listenRow(row, tip)
    return row
  })
}

async function fetchRows() {
  timer = null
  if (abort) abort.abort()
  const mine = abort = new AbortController()
  const el = root()
  if (!el) return
  const { start, end } = state.view
  const px = Math.max(1, Math.min(8192, Math.round(el.clientWidth || 1000)))
  const ready = state.traces.filter(t => t.state === 'ready')
  try {
    const answers = await Promise.all(ready.map(async t => {
      const a = await api(`/api/frames?trace=${t.trace}&start=${Math.floor(start)}&end=${Math.ceil(end)}&px=${px}`, mine.signal)
      return a.sets.map(set => ({ trace: t.trace, set }))
    }))
    if (mine.signal.aborted) return
    const sets = answers.flat()
    const same = sets.length === track.rows.length && sets.every((s, i) => track.rows[i].trace === s.trace && track.rows[i].name === s.set.name)
    if (same) sets.forEach((s, i) => { track.rows[i].frames = s.set.frames })
    else build(sets)
    track.view = { start, end }
    track.answered++
    track.rows.forEach(draw)
  } catch (err) {
    if (err.name !== 'AbortError') console.error(err)
  }
}

// The view moved: the rows are drawn again from what they hold, and the window asked for.
export function frameTrackMoved() {
  if (!track.started) return
  track.rows.forEach(draw)
  if (!timer) timer = setTimeout(fetchRows, 0)
}

// Once every trace is indexed: the rows of their frame sets.
export function startFrameTrack() {
  track.started = true
  state.frameTrack = track
  frameTrackMoved()
}
