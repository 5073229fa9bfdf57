// Phosphor's timeline page: tracks of the traces `phosphor view` serves, drawn from window queries
// (docs/VIEW-API.md). Each track asks for the visible window at its canvas's width in pixels, so
// what is fetched and drawn is bounded by the screen, not by the trace. Live traces (`phosphor
// record --view`) are fetched again a few times a second, the window following their newest data.
// The side panels (search, statistics, flame graph) are in panels.js, table.js and flame.js,
// drawing in draw.js, the mouse, keys and tooltips in input.js, how times are written in
// format.js, the view in the URL in url.js.

import { listenPanels } from './panels.js'
import { loadSystems, systemOf, hasBand, systemText, listenBand, sliceRows } from './system.js'
import { formatExact, formatNs, formatTime, setTheme, theme } from './format.js'
import { LEVEL_HEIGHT, FLAG_UNCLOSED, FLAG_WRONG_END, FLAG_INTERLACED, context, cssWidth, draw, drawRuler, levelTop, sizeCanvas, trackHeight, xOf } from './draw.js'
import { answeredInSight, drawSoon, drawnInSight, listenFrames, moveTracks, note, seeTracks } from './frames.js'
import { inSight, layoutChanged, sight, upToDate } from './bands.js'
import { runText } from './draw.js'
import { stacksOf, stacksTable } from './stacks.js'
import { listen } from './input.js'
import { readUrl, writeUrl } from './url.js'
import { tracesChanged } from './live.js'
import { frameTrackMoved, startFrameTrack } from './frametrack.js'

export { color, formatNs } from './format.js'

// The most pixels a window query may ask for (the server's `MAX_PIXELS`).
const MAX_PIXELS = 8192
const COUNTER_HEIGHT = 40
const COARSE_HEIGHT = 28
const KINDS = ['begin/end', 'complete', 'lock wait', 'lock held']
// A live trace followed shows its newest 5 s (or all of it while shorter).
const FOLLOW_NS = 5e9
const POINT_KINDS = ['instant', 'log', 'saturation (events dropped)', 'end without begin', 'chunks lost just before']

export const state = {
  traces: [],
  tracks: [],
  // The visible window, in nanoseconds on the shared timeline.
  view: { start: 0, end: 1 },
  span: { start: 0, end: 1 },
  selection: null,
  selected: null,
  // Ranges marked with `m` ([start, end] on the timeline), drawn over every track.
  marks: [],
  // Requests answered since the page loaded (tests wait on it).
  answered: 0,
  pending: 0,
  // 'coarse' once a trace's overview is drawn while indexing goes on; 'complete' once every
  // trace is indexed and its tracks drawn (tests and benchmarks wait on it).
  stage: 'loading',
  // How long each synchronous redraw of every track took, in milliseconds (the last 200).
  frames: [],
  // Whether the server shows recordings as they are made (`phosphor record --view`), and whether
  // the view follows their newest data (until the user zooms or pans away).
  live: false,
  following: true,
}
window.phosphorView = state
// Shows the window from `start` to `end` (nanoseconds on the shared timeline), kept near the
// traces (`clamp`).
state.show = (start, end) => {
  setFollowing(false)
  state.view = clamp({ start, end: Math.max(end, start + 1) })
  schedule()
}

// `v` moved and cut to lie within the traces and a margin of 5% of their span on either side:
// the view cannot be panned or zoomed out far past them.
export function clamp(v) {
  const m = 0.05 * (state.span.end - state.span.start)
  const lo = state.span.start - m, hi = state.span.end + m
  const len = Math.max(10, Math.min(v.end - v.start, hi - lo))
  const start = Math.max(lo, Math.min(v.start, hi - len))
  return { start, end: start + len }
}

// Following: the window's end stays at the newest data of the live traces.
function setFollowing(on) {
  state.following = on
  const b = $('follow-button')
  if (b) b.classList.toggle('on', on)
  if (on) follow()
}

function follow() {
  const live = state.traces.filter(t => t.state === 'live' && t.end_ns !== undefined)
  if (!live.length) return
  const newest = Math.max(...live.map(t => t.end_ns))
  const start = Math.max(state.span.start, newest - FOLLOW_NS)
  state.view = { start, end: Math.max(newest, start + 1) }
}
state.setFollowing = setFollowing

export const $ = id => document.getElementById(id)

export async function api(path, signal) {
  state.pending++
  try {
    const r = await fetch(path, signal ? { signal } : undefined)
    const body = await r.json()
    if (!r.ok) throw new Error(`${path}: ${body.error || r.status}`)
    return body
  } finally {
    state.pending--
    state.answered++
  }
}

export function status(text) {
  $('status').textContent = text
}

// One canvas row per thread (its levels and points) and per counter.
function buildTracks() {
  const root = $('tracks')
  root.replaceChildren()
  state.tracks = []
  for (const t of state.traces) {
    const group = document.createElement('div')
    group.className = 'group'
    group.textContent = groupText(t)
    root.appendChild(group)
    if (t.state !== 'ready' && t.state !== 'live') {
      // The overview while the index is built: where each thread was busy.
      for (const th of t.threads || []) {
        addTrack(root, { kind: 'coarse', trace: t.trace, tid: th.tid, name: th.name || `thread ${th.tid}` })
      }
      continue
    }
    // Threads of one name are told apart by their tid.
    const named = new Map()
    for (const th of t.threads) named.set(th.name, (named.get(th.name) || 0) + 1)
    for (const th of t.threads) {
      // A live thread's points may come later: their row is kept from the start.
      const points = t.state === 'live' ? 1 : th.points
      const sys = hasBand(t.trace, th.tid)
      const name = !th.name ? `thread ${th.tid}` : named.get(th.name) > 1 ? `${th.name} (tid ${th.tid})` : th.name
      addTrack(root, { kind: 'thread', trace: t.trace, tid: th.tid, name, thread: th.name || `thread ${th.tid}`, levels: th.levels, points, sys })
    }
    for (const a of t.asyncs || []) {
      addTrack(root, { kind: 'async', trace: t.trace, async: a.async, name: `${a.name} (async)`, levels: a.lanes, points: 0 })
    }
    for (const c of t.counters) {
      addTrack(root, { kind: 'counter', trace: t.trace, counter: c.counter, name: c.name })
    }
    const sys = systemOf(t.trace)
    if (sys && sys.heap) addTrack(root, { kind: 'heap', trace: t.trace, name: 'heap live bytes' })
  }
}

function addTrack(root, track) {
  const row = document.createElement('div')
  row.className = 'track'
  const label = document.createElement('div')
  label.className = 'label'
  label.textContent = track.name
  label.title = { thread: `${track.name} (tid ${track.tid})` + (track.sys ? '; the band under it: off the CPU, blocked (orange) or preempted (purple), and ticks at CPU samples (hover one)' : ''), async: `${track.name}: one lane per slice open at once`, counter: `${track.name} (counter)`, heap: 'the bytes allocated less those freed, from the heap totals of the system context', coarse: `${track.name} (tid ${track.tid}): events per pixel, while the trace is indexed` }[track.kind]
  const canvas = document.createElement('canvas')
  row.append(label, canvas)
  root.appendChild(row)
  track.canvas = canvas
  track.label = label
  track.data = null
  track.drawn = 0
  track.collapsed = false
  track.height = track.kind === 'counter' || track.kind === 'heap' ? COUNTER_HEIGHT
    : track.kind === 'coarse' ? COARSE_HEIGHT
      : trackHeight(track)
  canvas.style.height = `${track.height}px`
  canvas.dataset.track = String(state.tracks.length)
  // A track of several levels collapses to one (all drawn on it) when its label is clicked.
  if (track.kind === 'thread' || track.kind === 'async') {
    label.classList.add('folds')
    label.onclick = () => setCollapsed(track, !track.collapsed)
  }
  state.tracks.push(track)
}

export function setCollapsed(track, on) {
  track.collapsed = on
  track.label.classList.toggle('collapsed', on)
  track.height = trackHeight(track)
  sizeCanvases()
  layoutChanged()
  draw(track)
  drawFlow()
  seeTracks()
}

// Every canvas at its CSS width and the screen's pixel ratio; the ruler's row leaves room for the
// tracks' scrollbar, so that a time is at the same x on the ruler and on the tracks.
export function sizeCanvases() {
  const tracks = $('tracks')
  $('ruler-row').style.paddingRight = `${tracks.offsetWidth - tracks.clientWidth}px`
  for (const t of state.tracks) sizeCanvas(t.canvas, t.canvas.getBoundingClientRect().width, t.height)
  const ruler = $('ruler')
  sizeCanvas(ruler, ruler.getBoundingClientRect().width, 24)
}

// Fetches every track's window; draws each as it arrives. The window asked for is the visible one
// and half of it on either side, at the same pixels per nanosecond: a pan of up to half a screen
// is drawn at once from what is known while its new detail comes. An answer is taken unless the
// track has one from a newer request. The tracks in sight are asked first, the others once those
// are answered (and drawn when they scroll in; `schedule` cancels them for a newer view).
let generation = 0
// The round of requests under way: its window and what cancels it (`schedule`).
let round = null
async function refresh() {
  const gen = ++generation
  const view = { ...state.view }
  const { start, end } = view
  const half = (end - start) / 2
  const s = Math.floor(start - half), e = Math.ceil(end + half)
  const abort = new AbortController()
  const signal = abort.signal
  const mine = round = { start: s, end: e, abort, view, near: true }
  const ask = path => api(path, signal)
  drawRuler()
  showWindow()
  // One overview request a trace serves all its coarse tracks.
  const overviews = new Map()
  const fetchTrack = async track => {
    const px = Math.min(MAX_PIXELS, 2 * track.canvas.width)
    try {
      let data
      if (track.kind === 'coarse') {
        if (!overviews.has(track.trace)) overviews.set(track.trace, ask(`/api/overview?trace=${track.trace}&start=${s}&end=${e}&px=${px}`))
        const o = await overviews.get(track.trace)
        data = { events: (o.threads.find(th => th.tid === track.tid) || { events: [] }).events }
      } else if (track.kind === 'heap') {
        data = { samples: await ask(`/api/heap?trace=${track.trace}&start=${s}&end=${e}&px=${px}`) }
      } else if (track.kind !== 'counter') {
        const who = track.kind === 'thread' ? `tid=${track.tid}` : `async=${track.async}`
        const q = `trace=${track.trace}&${who}&start=${s}&end=${e}&px=${px}`
        const [slices, points, system] = await Promise.all([ask(`/api/slices?${q}`), track.points ? ask(`/api/points?${q}`) : null,
          track.sys ? ask(`/api/context?${q}`) : null])
        data = { slices, points, system }
      } else {
        data = { samples: await ask(`/api/samples?trace=${track.trace}&counter=${track.counter}&start=${s}&end=${e}&px=${px}`) }
      }
      if ((track.generation || 0) > gen) return
      track.generation = gen
      // The window drawn already (or out of sight), of an indexed trace: the same answer, nothing
      // to draw again.
      const w = track.window
      const indexed = (state.traces.find(x => x.trace === track.trace) || {}).state === 'ready'
      if (indexed && w && w.start === s && w.end === e && w.px === px && upToDate(track, sight(), true)) return
      track.data = data
      track.window = { start: s, end: e, px }
      if (data.slices) fitLevels(track, data.slices)
      drawSoon(track)
    } catch (err) {
      // A request cancelled because the view left its window is no error.
      if (signal.aborted) return
      status(String(err.message || err))
      console.error(err)
    }
  }
  const at = sight()
  await Promise.all(state.tracks.filter(t => inSight(t, at)).map(fetchTrack))
  answeredInSight(view)
  mine.near = false
  await Promise.all(state.tracks.filter(t => !inSight(t, at)).map(fetchTrack))
  if (round === mine) round = null
  // Whatever came into sight meanwhile is drawn at the view (unless a newer view's round follows).
  if (!signal.aborted && view.start === state.view.start && view.end === state.view.end) seeTracks(true)
  drawFlow()
  if (state.onRefresh) state.onRefresh()
}

// A live thread gains levels as it is recorded: its canvas grows to show them.
function fitLevels(track, slices) {
  const levels = Math.max(track.levels, slices.from + slices.levels.length)
  if (levels <= track.levels) return
  track.levels = levels
  track.height = trackHeight(track)
  sizeCanvas(track.canvas, cssWidth(track.canvas), track.height)
}

// Redraws at once what is known in the new view (each track in sight moved and scaled from its
// kept picture, its newly exposed edges drawn from the data known: `moveTracks`); fetches its
// detail in the next task, and then no more than one request round at a time (while the mouse moves, rounds follow
// each other: the detail keeps up with a drag instead of waiting for the mouse to stop). A round
// whose answers the view has left (its window no longer overlaps the view, or at a resolution 4×
// off) is cancelled: the newest view's round starts at once.
let timer = null
let fetching = false
let again = false
export function schedule() {
  const t0 = performance.now()
  drawRuler()
  showWindow()
  moveTracks()
  drawFlow()
  frameTrackMoved()
  note('move', t0)
  state.frames.push(performance.now() - t0)
  if (state.frames.length > 200) state.frames.shift()
  state.scheduled = true
  const { start, end } = state.view
  const r = round
  // (The tracks out of sight of a round for another view are asked again after those in sight.)
  const moved = r && (r.view.start !== start || r.view.end !== end)
  if (r && ((moved && !r.near) || end <= r.start || start >= r.end || (r.end - r.start) / (end - start) > 8 || (r.end - r.start) / (end - start) < 0.5)) {
    round = null
    r.abort.abort()
  }
  if (!timer) timer = setTimeout(fetchView, 0)
}

async function fetchView() {
  timer = null
  if (fetching) {
    again = true
    return
  }
  fetching = true
  state.scheduled = false
  try {
    await refresh()
  } finally {
    fetching = false
    if (again || state.scheduled) {
      again = false
      clearTimeout(timer)
      fetchView()
    }
  }
}

// Whether the page has drawn the detail of the current view: nothing scheduled or fetching, and
// every track in sight drawn at the view (tests wait on it).
state.idle = () => !timer && !fetching && !state.scheduled && state.pending === 0 && drawnInSight(true)

export function showWindow() {
  const { start, end } = state.view
  // As precise as a hundredth of the window.
  const res = Math.max(1, (end - start) / 100)
  $('window').textContent = `${formatTime(start - state.span.start, res)} – ${formatTime(end - state.span.start, res)} (${formatNs(end - start)})`
  $('selection').textContent = state.selection ? `selected ${formatNs(state.selection[1] - state.selection[0])}` : ''
  writeUrl()
}

// Zooms by `factor` about the time `at` (the centre when not given): `at` stays where it is on
// the screen.
export function zoom(factor, at) {
  setFollowing(false)
  const { start, end } = state.view
  const span = Math.max(10, (end - start) * factor)
  const center = at ?? (start + end) / 2
  const left = (center - start) / (end - start)
  state.view = clamp({ start: center - span * left, end: center - span * left + span })
  schedule()
}

export function pan(fraction) {
  setFollowing(false)
  const d = (state.view.end - state.view.start) * fraction
  state.view = clamp({ start: state.view.start + d, end: state.view.end + d })
  schedule()
}
state.pan = pan
state.zoom = zoom

export function timeAt(canvas, clientX) {
  const r = canvas.getBoundingClientRect()
  return state.view.start + (clientX - r.left) / r.width * (state.view.end - state.view.start)
}

// The selected slice's flow (an instrumented future: its async slice and its polls) as arrows
// over the tracks, from each member to the next: from where one leaves off to where the next
// starts, as Perfetto draws a flow.
export function drawFlow() {
  const root = $('tracks')
  let c = $('flow-overlay')
  const f = state.flow
  const first = state.tracks[0]
  if (!f || f.members.length < 2 || !first) {
    if (c) c.remove()
    return
  }
  if (!c) {
    c = document.createElement('canvas')
    c.id = 'flow-overlay'
  }
  if (c.parentNode !== root) root.appendChild(c)
  c.style.left = `${first.canvas.offsetLeft}px`
  c.style.width = `${cssWidth(first.canvas)}px`
  sizeCanvas(c, cssWidth(first.canvas), root.scrollHeight)
  const g = context(c)
  const trackOf = m => state.tracks.find(t => t.trace === f.trace &&
    (m.async !== null ? t.kind === 'async' && t.async === m.async : t.kind === 'thread' && t.tid === m.tid))
  // A member's place: where the flow leaves it (`out`), or comes into it.
  const at = (m, out) => {
    const track = trackOf(m)
    if (!track) return null
    const t = out ? (m.kind === 'begin' ? m.start_ns : m.end_ns) : (m.kind === 'end' ? m.end_ns : m.start_ns)
    return { x: xOf(track.canvas, t), y: track.canvas.offsetTop + levelTop(track, m.level) + LEVEL_HEIGHT / 2 }
  }
  g.strokeStyle = g.fillStyle = '#b0306a'
  g.lineWidth = 1.5
  let drawn = 0
  for (let i = 1; i < f.members.length; i++) {
    const a = at(f.members[i - 1], true), b = at(f.members[i], false)
    if (!a || !b) continue
    g.beginPath()
    g.moveTo(a.x, a.y)
    g.bezierCurveTo((a.x + b.x) / 2, a.y, (a.x + b.x) / 2, b.y, b.x, b.y)
    g.stroke()
    // The curve comes into its end level: the head points along the line.
    const angle = b.x >= a.x ? 0 : Math.PI
    g.beginPath()
    g.moveTo(b.x, b.y)
    g.lineTo(b.x - 7 * Math.cos(angle - 0.4), b.y - 7 * Math.sin(angle - 0.4))
    g.lineTo(b.x - 7 * Math.cos(angle + 0.4), b.y - 7 * Math.sin(angle + 0.4))
    g.fill()
    drawn++
  }
  c.dataset.arrows = String(drawn)
}

// Fetches the flow of slice `index` of trace `trace`, if it is in one, for `drawFlow`; a row
// for the details.
async function showFlow(trace, index) {
  state.flow = null
  const t = state.traces.find(x => x.trace === trace)
  if (!t || t.state !== 'ready') return []
  const f = await api(`/api/flow?trace=${trace}&index=${index}`)
  if (!f.members.length) {
    drawFlow()
    return []
  }
  state.flow = { trace, members: f.members }
  drawFlow()
  const polls = f.members.filter(m => m.kind === 'poll').length
  return [['flow', `${f.name} #${f.id}: ${polls} poll${polls === 1 ? '' : 's'}${f.more ? ' (the first 2,000 members)' : ''}`]]
}

export async function select(track, hit) {
  const d = $('details')
  state.flow = null
  drawFlow()
  if (hit.merged) {
    const m = hit.merged
    d.innerHTML = ''
    d.append(list(runText(-m[2], m.length > 4 ? track.data.slices.names[m[4]] : ''), [['', `each narrower than a pixel, over ${formatNs(m[1] - m[0])}; zoom in to see them`]]))
    return
  }
  if (hit.point) {
    const p = hit.point
    if (p[2] < 0) {
      d.innerHTML = ''
      d.append(list(`${-p[2]} points`, [['time', `${formatNs(p[0] - state.span.start)} – ${formatNs(p[1] - state.span.start)}`], ['thread', track.name], ['', 'zoom in to see them']]))
      return
    }
    const pt = await api(`/api/point?trace=${track.trace}&index=${p[2]}`)
    const ev = pt.event || {}
    d.innerHTML = ''
    d.append(list(ev.message || pt.name, [
      ['kind', POINT_KINDS[pt.kind] || 'point'],
      ['time', formatExact(pt.ts_ns - state.span.start)],
      ['thread', track.name],
      ...eventRows(ev),
    ]))
    d.dataset.message = ev.message || ''
    return
  }
  state.selected = { trace: track.trace, index: hit.slice[3], start: hit.slice[0], end: hit.slice[1] }
  draw(track)
  // (The others in sight drop the outline of the slice selected before, in the next frames.)
  seeTracks()
  writeUrl()
  const s = await sliceDetails(track.trace, hit.slice[3])
  // Kept to show it again from the index once a live trace is indexed (live.js).
  state.shownSlice = { trace: track.trace, tid: s.tid, async: s.async, start_ns: s.start_ns, end_ns: s.end_ns, name: s.name, live: !!s.live }
  const flow = await showFlow(track.trace, hit.slice[3])
  const flags = s.flags
  // A live slice's path and self time are from what the live view holds (null if unknown).
  const known = s.self_ns !== null
  const problems = [
    flags & FLAG_UNCLOSED ? 'never ended (runs to the thread\u2019s last event)' : '',
    flags & FLAG_WRONG_END ? 'closed by the end of another name' : '',
    flags & FLAG_INTERLACED ? 'interlaced with a slice it is not inside' : '',
  ].filter(Boolean)
  d.innerHTML = ''
  d.append(list(s.name, [
    ['duration', formatExact(s.duration_ns)],
    ...(known ? [
      ['self', `${formatExact(s.self_ns)}` + (s.children ? ` (${s.children.toLocaleString('en')} inside)` : '')],
      ['path', s.path.join(' / ')],
    ] : []),
    ['start', formatExact(s.start_ns - state.span.start)],
    ['end', formatExact(s.end_ns - state.span.start)],
    [s.async === null ? 'thread' : 'track', s.async === null ? `${track.thread} (tid ${s.tid})` : track.name],
    ['level', String(s.level)],
    ['kind', KINDS[flags & 3]],
    ...eventRows(s.event || {}),
    ...sliceRows(s),
    ...flow,
    ...problems.map(p => ['problem', p]),
  ]))
  d.dataset.durationNs = String(s.duration_ns)
  d.dataset.live = s.live ? '1' : '0'
  // A thread slice with CPU samples inside (a long poll, a slow scope): their call stacks.
  if (s.async === null && s.system && s.system.samples > 0) {
    const index = hit.slice[3]
    const r = await stacksOf(track.trace, s.tid, s.start_ns, s.end_ns)
    if (state.selected && state.selected.trace === track.trace && state.selected.index === index) d.appendChild(stacksTable(r, 'inside it, by call stack'))
  }
  return s
}

// A slice's details (`/api/slice`), kept for the tooltips (at most 500; a live trace's are not
// kept: they fill in once it is indexed).
const details = new Map()
export function sliceDetails(trace, index) {
  const key = `${trace}/${index}`
  let d = details.get(key)
  if (!d) {
    d = api(`/api/slice?trace=${trace}&index=${index}`)
    if (details.size >= 500) details.clear()
    const t = state.traces.find(x => x.trace === trace)
    if (t && t.state === 'ready') details.set(key, d)
  }
  return d
}

// Esc: no slice selected, no range, no flow.
export function clearSelection() {
  state.selected = null
  state.selection = null
  state.flow = null
  $('details').innerHTML = '<p class="hint">Click a slice to see it here.</p>'
  schedule()
  if (state.onSelection) state.onSelection()
}

// An event's details as rows: category, level, source line, arguments (each exactly: an integer
// past 2^53 comes as its digits).
export function eventRows(ev) {
  if (ev.error) return [['event', ev.error]]
  const rows = []
  if (ev.category !== undefined) rows.push(['category', ev.category])
  if (ev.level) rows.push(['level', ev.level])
  if (ev.file) rows.push(['source', `${ev.file}:${ev.line}`])
  for (const [name, v] of ev.args || []) rows.push([name || 'argument', String(v)])
  if (ev.truncated) rows.push(['problem', 'a string argument was cut when recorded'])
  return rows
}

// A heading `title` over `rows` ([term, text] pairs) as a definition list.
export function list(title, rows) {
  const frag = document.createDocumentFragment()
  const h = document.createElement('h3')
  h.textContent = title
  const dl = document.createElement('dl')
  for (const [k, v] of rows) {
    const dt = document.createElement('dt')
    dt.textContent = k
    const dd = document.createElement('dd')
    dd.textContent = v
    if (k === 'problem') dd.className = 'problem'
    dl.append(dt, dd)
  }
  frag.append(h, dl)
  return frag
}

function groupText(t) {
  // A trace of more tracks of a kind than the server lists shows its busiest.
  const more = ['threads', 'counters', 'asyncs']
    .filter(k => t[`${k}_total`] > (t[k] || []).length)
    .map(k => ` · the busiest ${t[k].length} of ${t[`${k}_total`].toLocaleString('en')} ${k === 'asyncs' ? 'async tracks' : k}`)
  // With several traces, how each was placed: traces of other moments start at the view's zero.
  const placed = state.traces.length > 1 && t.placed ? ` · placed ${t.placed}` : ''
  return `${t.process} (pid ${t.pid}) · ${t.file}` + placed + (t.read_error ? ` · read up to: ${t.read_error}` : '') + more.join('') + systemText(t.trace) + progressText(t)
}

function progressText(t) {
  if (t.state === 'ready') return ''
  if (t.state === 'live') {
    const l = t.live
    const n = x => x.toLocaleString('en')
    return ` · live${l.connected ? '' : ', ended (indexing next)'} · ${n(t.events)} events` +
      (l.dropped ? ` · ${n(l.dropped)} oldest records dropped from the live view (limit ${n(l.limit)}; the file has them)` : '') +
      (l.skipped ? ` · ${n(l.skipped)} events skipped while the view lagged` : '') +
      (l.refused ? ` · ${n(l.refused)} events past the live view's bounds` : '')
  }
  if (t.state === 'failed') return ` · could not be indexed: ${t.error}`
  const pct = t.bytes ? Math.floor(100 * t.read / t.bytes) : 0
  return t.state === 'scanning' ? ` · scanning ${pct}%` : ` · indexing ${pct}% (an overview until then)`
}

// The window every trace spans (those not yet scanned have none).
function spanOf(traces) {
  const known = traces.filter(t => t.start_ns !== undefined)
  if (!known.length) return null
  const start = Math.min(...known.map(t => t.start_ns))
  const end = Math.max(...known.map(t => t.end_ns))
  return { start, end: Math.max(end, start + 1) }
}

// Takes in a new list of traces: tracks are made again when a trace's state or tracks changed.
// While traces are live, every track is fetched again (the caller's pace: a few times a second).
async function takeIn(traces) {
  const shape = list => list.map(t => `${t.state}/${(t.threads || []).length}/${(t.asyncs || []).length}/${(t.counters || []).length}`).join()
  const before = shape(state.traces)
  const after = shape(traces)
  const was = state.traces
  state.traces = traces
  const span = spanOf(traces)
  const live = traces.some(t => t.state === 'live')
  if (span) {
    const whole = state.view.start === state.span.start && state.view.end === state.span.end
    state.span = span
    if (live && state.following) follow()
    else if (whole || state.stage === 'loading') state.view = { ...span }
  }
  if (before !== after) {
    await loadSystems(traces)
    buildTracks()
    sizeCanvases()
    await refresh()
  } else {
    // The progress figures, and a live trace's new data.
    document.querySelectorAll('#tracks .group').forEach((g, i) => {
      const t = traces[i]
      if (t) g.textContent = groupText(t)
    })
    if (live) await refresh()
  }
  await tracesChanged(was, traces)
}

async function main() {
  listenFrames()
  setTheme(theme(), false)
  listen()
  listenPanels()
  // The band's hit test works in canvas pixels.
  listenBand(canvas => state.tracks[Number(canvas.dataset.track)], (c, t) => xOf(c, t) * c.width / cssWidth(c))
  $('follow-button').onclick = () => {
    setFollowing(!state.following)
    schedule()
  }
  for (;;) {
    const { traces, done, live, listening } = await api('/api/traces')
    state.listening = listening
    if (live && !state.live) {
      state.live = true
      $('follow-button').hidden = false
      setFollowing(true)
      document.body.dataset.stage = state.stage = 'live'
    }
    await takeIn(traces)
    if (done) break
    if (state.live) {
      // New connections, and the newest data, about five times a second.
      await new Promise(r => setTimeout(r, 200))
      continue
    }
    if (traces.some(t => t.state !== 'scanning') && state.tracks.length) {
      state.stage = 'coarse'
      document.body.dataset.stage = 'coarse'
    }
    await new Promise(r => setTimeout(r, 250))
  }
  const failed = state.traces.filter(t => t.state === 'failed')
  if (failed.length) status(failed.map(t => `${t.file}: ${t.error}`).join('; '))
  // A link to a view reopens it.
  await readUrl()
  if (state.onSelection) state.onSelection()
  startFrameTrack()
  state.ready = true
  state.stage = 'complete'
  document.body.dataset.stage = 'complete'
}

main().catch(err => {
  status(String(err.message || err))
  console.error(err)
})
