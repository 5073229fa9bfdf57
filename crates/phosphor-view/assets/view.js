// Phosphor's timeline page: tracks of the traces `phosphor view` serves, drawn from window queries
// (docs/VIEW-API.md). Each track asks for the visible window at its canvas's width in pixels, so
// what is fetched and drawn is bounded by the screen, not by the trace. Live traces (`phosphor
// record --view`) are fetched again a few times a second, the window following their newest data.
// The side panels (search, statistics, flame graph) are in panels.js.

import { listenPanels } from './panels.js'
import { SYS_ROW, loadSystems, systemOf, hasBand, systemText, drawBand, listenBand, sliceRows, hiddenPoint } from './system.js'

const LEVEL_HEIGHT = 18
const POINT_ROW = 12
const COUNTER_HEIGHT = 40
const COARSE_HEIGHT = 28
const FLAG_UNCLOSED = 4
const FLAG_WRONG_END = 8
const FLAG_INTERLACED = 16
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
// Shows the window from `start` to `end` (nanoseconds on the shared timeline).
state.show = (start, end) => {
  setFollowing(false)
  state.view = { start, end: Math.max(end, start + 1) }
  schedule()
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

export function formatNs(ns) {
  const a = Math.abs(ns)
  if (a < 1e3) return `${Math.round(ns)} ns`
  if (a < 1e6) return `${(ns / 1e3).toPrecision(3)} µs`
  if (a < 1e9) return `${(ns / 1e6).toPrecision(3)} ms`
  return `${(ns / 1e9).toPrecision(4)} s`
}

// Each name's colour, made once (a redraw may paint tens of thousands of slices); at most 10,000
// names are kept.
const colors = new Map()
export function color(name) {
  let c = colors.get(name)
  if (c !== undefined) return c
  let h = 2166136261
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619)
  c = `hsl(${(h >>> 0) % 360}, 55%, 68%)`
  if (colors.size >= 10000) colors.clear()
  colors.set(name, c)
  return c
}

export async function api(path) {
  state.pending++
  try {
    const r = await fetch(path)
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
    for (const th of t.threads) {
      // A live thread's points may come later: their row is kept from the start.
      const points = t.state === 'live' ? 1 : th.points
      const sys = hasBand(t.trace, th.tid)
      addTrack(root, { kind: 'thread', trace: t.trace, tid: th.tid, name: th.name || `thread ${th.tid}`, levels: th.levels, points, sys })
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
  track.data = null
  track.drawn = 0
  track.height = track.kind === 'counter' || track.kind === 'heap' ? COUNTER_HEIGHT
    : track.kind === 'coarse' ? COARSE_HEIGHT
      : threadHeight(track, Math.max(1, track.levels))
  canvas.height = track.height
  canvas.style.height = `${track.height}px`
  canvas.dataset.track = String(state.tracks.length)
  state.tracks.push(track)
}

// A thread track's height: its levels, its points' row, its system band.
function threadHeight(track, levels) {
  return levels * LEVEL_HEIGHT + (track.points ? POINT_ROW : 0) + (track.sys ? SYS_ROW : 0)
}

function sizeCanvases() {
  for (const c of [$('ruler'), ...state.tracks.map(t => t.canvas)]) {
    const w = Math.max(1, Math.floor(c.getBoundingClientRect().width))
    if (c.width !== w) c.width = w
  }
}

// Fetches every track's window; draws each as it arrives. A newer view supersedes older answers.
let generation = 0
async function refresh() {
  const gen = ++generation
  const { start, end } = state.view
  const s = Math.floor(start), e = Math.ceil(end)
  drawRuler()
  showWindow()
  // One overview request a trace serves all its coarse tracks.
  const overviews = new Map()
  await Promise.all(state.tracks.map(async track => {
    const px = track.canvas.width
    try {
      let data
      if (track.kind === 'coarse') {
        if (!overviews.has(track.trace)) overviews.set(track.trace, api(`/api/overview?trace=${track.trace}&start=${s}&end=${e}&px=${px}`))
        const o = await overviews.get(track.trace)
        data = { events: (o.threads.find(th => th.tid === track.tid) || { events: [] }).events }
      } else if (track.kind === 'heap') {
        data = { samples: await api(`/api/heap?trace=${track.trace}&start=${s}&end=${e}&px=${px}`) }
      } else if (track.kind !== 'counter') {
        const who = track.kind === 'thread' ? `tid=${track.tid}` : `async=${track.async}`
        const q = `trace=${track.trace}&${who}&start=${s}&end=${e}&px=${px}`
        const [slices, points, system] = await Promise.all([api(`/api/slices?${q}`), track.points ? api(`/api/points?${q}`) : null,
          track.sys ? api(`/api/context?${q}`) : null])
        data = { slices, points, system }
      } else {
        data = { samples: await api(`/api/samples?trace=${track.trace}&counter=${track.counter}&start=${s}&end=${e}&px=${px}`) }
      }
      if (gen !== generation) return
      track.data = data
      track.window = { start: s, end: e }
      if (data.slices) fitLevels(track, data.slices)
      draw(track)
    } catch (err) {
      status(String(err.message || err))
      console.error(err)
    }
  }))
  drawFlow()
}

// A live thread gains levels as it is recorded: its canvas grows to show them.
function fitLevels(track, slices) {
  const levels = Math.max(track.levels, slices.from + slices.levels.length)
  if (levels <= track.levels) return
  track.levels = levels
  track.height = threadHeight(track, levels)
  track.canvas.height = track.height
  track.canvas.style.height = `${track.height}px`
}

let timer = null
function schedule() {
  const t0 = performance.now()
  drawRuler()
  showWindow()
  for (const t of state.tracks) draw(t)
  drawFlow()
  state.frames.push(performance.now() - t0)
  if (state.frames.length > 200) state.frames.shift()
  clearTimeout(timer)
  timer = setTimeout(refresh, 40)
}

const xOf = (canvas, t) => (t - state.view.start) / (state.view.end - state.view.start) * canvas.width

function draw(track) {
  const c = track.canvas
  const g = c.getContext('2d')
  g.clearRect(0, 0, c.width, c.height)
  track.drawn = 0
  if (!track.data) return
  if (track.kind === 'coarse') drawCoarse(track, g)
  else if (track.kind !== 'counter' && track.kind !== 'heap') drawThread(track, g)
  else drawCounter(track, g)
}

// Events per pixel as bars, on a log scale (the window they were asked for, placed in the view).
function drawCoarse(track, g) {
  const c = track.canvas
  const events = track.data.events
  if (!events.length) return
  const top = Math.log1p(Math.max(...events))
  if (!(top > 0)) return
  const per = (track.window.end - track.window.start) / events.length
  g.fillStyle = '#8a94a6'
  events.forEach((n, i) => {
    if (!(n > 0)) return
    const x0 = xOf(c, track.window.start + i * per)
    const x1 = xOf(c, track.window.start + (i + 1) * per)
    const h = Math.max(1, Math.log1p(n) / top * (c.height - 4))
    g.fillRect(x0, c.height - 2 - h, Math.max(1, x1 - x0), h)
  })
}

// Where an item of a level is drawn: from x0 to x1 on `canvas` (at least a pixel wide).
function extent(canvas, it) {
  const x0 = Math.max(-1, xOf(canvas, it[0]))
  return [x0, Math.min(canvas.width + 1, Math.max(xOf(canvas, it[1]), x0 + 1))]
}

const POINT_COLORS = ['#357', '#283', '#d00', '#d00', '#d00']

// A thread's (or async track's) levels, then its points. Runs of narrow slices first, in one
// colour, then the slices; the items to click are found again from the data (`hitAt`), so a
// redraw makes no object per item.
function drawThread(track, g) {
  const c = track.canvas
  const { slices, points } = track.data
  g.font = '11px system-ui, sans-serif'
  g.textBaseline = 'middle'
  let drawn = 0
  slices.levels.forEach((items, i) => {
    const y = (slices.from + i) * LEVEL_HEIGHT
    g.fillStyle = '#9aa0ab'
    for (const it of items) {
      if (it[2] >= 0) continue
      const [x0, x1] = extent(c, it)
      g.fillRect(x0, y + 1, x1 - x0, LEVEL_HEIGHT - 2)
    }
    for (const it of items) {
      if (it[2] < 0) continue
      const [x0, x1] = extent(c, it)
      const name = slices.names[it[2]] ?? ''
      const flags = it[4]
      g.fillStyle = color(name)
      g.fillRect(x0, y + 1, x1 - x0, LEVEL_HEIGHT - 2)
      if (flags & (FLAG_WRONG_END | FLAG_INTERLACED | FLAG_UNCLOSED)) {
        g.strokeStyle = '#c00'
        g.lineWidth = 2
        g.strokeRect(x0 + 1, y + 2, Math.max(1, x1 - x0 - 2), LEVEL_HEIGHT - 4)
      }
      if (state.selected && state.selected.trace === track.trace && state.selected.index === it[3]) {
        g.strokeStyle = '#000'
        g.lineWidth = 2
        g.strokeRect(x0, y + 1, x1 - x0, LEVEL_HEIGHT - 2)
      }
      if (x1 - x0 > 24) {
        g.fillStyle = '#111'
        g.save()
        g.beginPath()
        g.rect(x0, y, x1 - x0, LEVEL_HEIGHT)
        g.clip()
        g.fillText(name, Math.max(x0, 0) + 3, y + LEVEL_HEIGHT / 2)
        g.restore()
      }
    }
    drawn += items.length
  })
  if (points) {
    const y = track.height - POINT_ROW - (track.sys ? SYS_ROW : 0)
    for (const p of points.points) {
      if (p[2] >= 0 && hiddenPoint(track.trace, points.names[p[1]])) continue
      drawn++
      const x = xOf(c, p[0])
      g.fillStyle = POINT_COLORS[p[2] < 0 ? 0 : p[3]] || POINT_COLORS[0]
      g.beginPath()
      g.moveTo(x, y + 1)
      g.lineTo(x - 4, y + POINT_ROW - 1)
      g.lineTo(x + 4, y + POINT_ROW - 1)
      g.fill()
    }
  }
  if (track.sys) drawn += drawBand(track, g, xOf)
  track.drawn = drawn
}

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
  const yOf = v => c.height - 3 - (hi === lo ? 0.5 : (v - lo) / (hi - lo)) * (c.height - 6)
  g.strokeStyle = '#2a6fb0'
  g.fillStyle = 'rgba(42, 111, 176, 0.35)'
  g.beginPath()
  let first = true
  for (const s of items) {
    const x = xOf(c, s[0])
    const x1 = xOf(c, s[1])
    if (s[2] > 1) g.fillRect(x, yOf(num(s[4])), Math.max(1, x1 - x), Math.max(1, yOf(num(s[3])) - yOf(num(s[4]))))
    const y = yOf(num(s[5]))
    if (first) g.moveTo(x, y)
    else g.lineTo(x, y)
    g.lineTo(Math.max(x, x1), y)
    first = false
  }
  g.lineTo(c.width, yOf(num(items[items.length - 1][5])))
  g.stroke()
  g.fillStyle = '#333'
  g.fillText(`${hi}`, 4, 9)
  g.fillText(`${lo}`, 4, c.height - 4)
}

// Ticks at 1, 2 or 5 times a power of ten, labelled from the start of the traces.
function drawRuler() {
  const c = $('ruler')
  const g = c.getContext('2d')
  g.clearRect(0, 0, c.width, c.height)
  const span = state.view.end - state.view.start
  const raw = span / Math.max(1, c.width / 100)
  const pow = Math.pow(10, Math.floor(Math.log10(raw)))
  const step = [1, 2, 5, 10].map(m => m * pow).find(s => s >= raw)
  g.fillStyle = '#444'
  g.font = '11px system-ui, sans-serif'
  for (let t = Math.ceil((state.view.start - state.span.start) / step) * step; t + state.span.start <= state.view.end; t += step) {
    const x = xOf(c, t + state.span.start)
    g.fillRect(x, 14, 1, 10)
    g.fillText(formatNs(t), x + 3, 11)
  }
  if (state.selection) {
    const [a, b] = state.selection
    g.fillStyle = 'rgba(40, 90, 200, 0.25)'
    g.fillRect(xOf(c, a), 0, xOf(c, b) - xOf(c, a), c.height)
  }
}

function showWindow() {
  const { start, end } = state.view
  $('window').textContent = `${formatNs(start - state.span.start)} – ${formatNs(end - state.span.start)} (${formatNs(end - start)})`
  $('selection').textContent = state.selection ? `selected ${formatNs(state.selection[1] - state.selection[0])}` : ''
}

function zoom(factor, at) {
  setFollowing(false)
  const { start, end } = state.view
  const span = Math.max(10, (end - start) * factor)
  const center = at ?? (start + end) / 2
  const left = (center - start) / (end - start)
  state.view = { start: center - span * left, end: center - span * left + span }
  schedule()
}

function pan(fraction) {
  setFollowing(false)
  const d = (state.view.end - state.view.start) * fraction
  state.view = { start: state.view.start + d, end: state.view.end + d }
  schedule()
}
state.pan = pan
state.zoom = zoom

function timeAt(canvas, clientX) {
  const r = canvas.getBoundingClientRect()
  return state.view.start + (clientX - r.left) / r.width * (state.view.end - state.view.start)
}

// The selected slice's flow (an instrumented future: its async slice and its polls) as arrows
// over the tracks, from each member to the next: from where one leaves off to where the next
// starts, as Perfetto draws a flow.
function drawFlow() {
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
  if (c.width !== first.canvas.width) c.width = first.canvas.width
  if (c.height !== root.scrollHeight) c.height = root.scrollHeight
  c.style.height = `${c.height}px`
  const g = c.getContext('2d')
  g.clearRect(0, 0, c.width, c.height)
  const trackOf = m => state.tracks.find(t => t.trace === f.trace &&
    (m.async !== null ? t.kind === 'async' && t.async === m.async : t.kind === 'thread' && t.tid === m.tid))
  // A member's place: where the flow leaves it (`out`), or comes into it.
  const at = (m, out) => {
    const track = trackOf(m)
    if (!track) return null
    const t = out ? (m.kind === 'begin' ? m.start_ns : m.end_ns) : (m.kind === 'end' ? m.end_ns : m.start_ns)
    return { x: xOf(track.canvas, t), y: track.canvas.offsetTop + m.level * LEVEL_HEIGHT + LEVEL_HEIGHT / 2 }
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
    d.innerHTML = `<h3>${-m[2]} slices</h3><p class="hint">narrower than a pixel, ${formatNs(m[1] - m[0])} in all; zoom in to see them</p>`
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
      ['time', formatNs(pt.ts_ns - state.span.start)],
      ['thread', track.name],
      ...eventRows(ev),
    ]))
    d.dataset.message = ev.message || ''
    return
  }
  state.selected = { trace: track.trace, index: hit.slice[3] }
  draw(track)
  const s = await api(`/api/slice?trace=${track.trace}&index=${hit.slice[3]}`)
  const flow = await showFlow(track.trace, hit.slice[3])
  const flags = s.flags
  // A live slice: its path, self time and event come once the trace is indexed.
  const known = s.self_ns !== null
  const problems = [
    flags & FLAG_UNCLOSED ? 'never ended (runs to the thread\u2019s last event)' : '',
    flags & FLAG_WRONG_END ? 'closed by the end of another name' : '',
    flags & FLAG_INTERLACED ? 'interlaced with a slice it is not inside' : '',
  ].filter(Boolean)
  d.innerHTML = ''
  d.append(list(s.name, [
    ['duration', formatNs(s.duration_ns)],
    ...(known ? [
      ['self', `${formatNs(s.self_ns)}` + (s.children ? ` (${s.children.toLocaleString('en')} inside)` : '')],
      ['path', s.path.join(' / ')],
    ] : []),
    ['start', formatNs(s.start_ns - state.span.start)],
    [s.async === null ? 'thread' : 'track', s.async === null ? `${track.name} (tid ${s.tid})` : track.name],
    ['level', String(s.level)],
    ['kind', KINDS[flags & 3]],
    ...eventRows(s.event || {}),
    ...sliceRows(s),
    ...flow,
    ...problems.map(p => ['problem', p]),
  ]))
  d.dataset.durationNs = String(s.duration_ns)
}

// An event's details as rows: category, level, source line, arguments.
function eventRows(ev) {
  if (ev.error) return [['event', ev.error]]
  const rows = []
  if (ev.category !== undefined) rows.push(['category', ev.category])
  if (ev.level) rows.push(['level', ev.level])
  if (ev.file) rows.push(['source', `${ev.file}:${ev.line}`])
  for (const [name, v] of ev.args || []) rows.push([name || 'argument', String(v)])
  if (ev.truncated) rows.push(['problem', 'a string argument was cut when recorded'])
  return rows
}

function list(title, rows) {
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

// What is drawn at the mouse event `e` on `track`: a slice, a run of narrow ones, or a point (the
// nearest within 4 pixels), from the data the track was drawn from.
function hitAt(track, e) {
  const c = track.canvas
  const r = c.getBoundingClientRect()
  const x = (e.clientX - r.left) * c.width / r.width
  const y = e.clientY - r.top
  const d = track.data
  if (!d || !d.slices) return undefined
  if (track.sys && y >= track.height - SYS_ROW) return undefined
  if (d.points && y >= track.height - POINT_ROW - (track.sys ? SYS_ROW : 0)) {
    let best, dist = 5
    for (const p of d.points.points) {
      if (p[2] >= 0 && hiddenPoint(track.trace, d.points.names[p[1]])) continue
      const away = Math.abs(xOf(c, p[0]) - x)
      if (away < dist) [best, dist] = [p, away]
    }
    return best && { point: best, name: best[2] < 0 ? '' : d.points.names[best[1]] }
  }
  const level = Math.floor(y / LEVEL_HEIGHT)
  for (const it of d.slices.levels[level - d.slices.from] || []) {
    const [x0, x1] = extent(c, it)
    if (x >= x0 - 1 && x <= x1 + 1) {
      return it[2] < 0 ? { merged: it, level } : { slice: it, name: d.slices.names[it[2]] ?? '', level }
    }
  }
  return undefined
}

function listen() {
  let drag = null
  const down = e => {
    const canvas = e.target.closest('canvas')
    if (!canvas) return
    drag = { x: e.clientX, canvas, view: { ...state.view }, moved: false, select: e.shiftKey, from: timeAt(canvas, e.clientX) }
  }
  document.addEventListener('mousedown', down)
  document.addEventListener('mousemove', e => {
    if (!drag) return
    if (Math.abs(e.clientX - drag.x) > 3) drag.moved = true
    if (!drag.moved) return
    if (drag.select) {
      const to = timeAt(drag.canvas, e.clientX)
      state.selection = [Math.min(drag.from, to), Math.max(drag.from, to)]
      drawRuler()
      showWindow()
      return
    }
    setFollowing(false)
    const r = drag.canvas.getBoundingClientRect()
    const d = (e.clientX - drag.x) / r.width * (drag.view.end - drag.view.start)
    state.view = { start: drag.view.start - d, end: drag.view.end - d }
    schedule()
  })
  document.addEventListener('mouseup', e => {
    const d = drag
    drag = null
    if (!d || d.moved) return
    const track = state.tracks[Number(d.canvas.dataset.track)]
    const hit = track && hitAt(track, e)
    if (hit) select(track, hit).catch(err => status(String(err.message || err)))
  })
  document.addEventListener('wheel', e => {
    const canvas = e.target.closest && e.target.closest('canvas')
    if (!canvas) return
    e.preventDefault()
    if (e.shiftKey) pan(e.deltaY / 1000)
    else zoom(Math.exp(e.deltaY / 500), timeAt(canvas, e.clientX))
  }, { passive: false })
  document.addEventListener('keydown', e => {
    if (e.target.closest && e.target.closest('input')) return
    const k = e.key.toLowerCase()
    if (k === 'w') zoom(0.8)
    else if (k === 's') zoom(1.25)
    else if (k === 'a') pan(-0.1)
    else if (k === 'd') pan(0.1)
    else if (k === 'f' && state.live) {
      setFollowing(!state.following)
      schedule()
    }
  })
  window.addEventListener('resize', () => {
    sizeCanvases()
    schedule()
  })
}

function groupText(t) {
  // A trace of more tracks of a kind than the server lists shows its busiest.
  const more = ['threads', 'counters', 'asyncs']
    .filter(k => t[`${k}_total`] > (t[k] || []).length)
    .map(k => ` · the busiest ${t[k].length} of ${t[`${k}_total`].toLocaleString('en')} ${k === 'asyncs' ? 'async tracks' : k}`)
  return `${t.process} (pid ${t.pid}) · ${t.file}` + (t.read_error ? ` · read up to: ${t.read_error}` : '') + more.join('') + systemText(t.trace) + progressText(t)
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
}

async function main() {
  listen()
  listenPanels()
  listenBand(canvas => state.tracks[Number(canvas.dataset.track)], xOf)
  $('follow-button').onclick = () => {
    setFollowing(!state.following)
    schedule()
  }
  for (;;) {
    const { traces, done, live } = await api('/api/traces')
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
  state.ready = true
  state.stage = 'complete'
  document.body.dataset.stage = 'complete'
}

main().catch(err => {
  status(String(err.message || err))
  console.error(err)
})
