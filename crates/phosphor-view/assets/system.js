// The system context on the timeline (format 1.6's system blocks; `/api/system`, `/api/context`,
// `/api/stack`, `/api/heap`: src/system_api.rs): under each thread's slices a band of its off-CPU
// intervals (blocked and preempted in two colours) and tick marks at its CPU samples; hovering one
// says what it is (a sample's stack is fetched, symbolized, when first hovered; a bounded cache);
// a process's live heap bytes as a counter track. Fetched per window at the canvas's width, as
// the slices are: the server merges what is narrower than a pixel.

import { state, api, formatNs } from './view.js'

export const SYS_ROW = 12
export const BLOCKED = '#e07b24'
export const PREEMPTED = '#8e44ad'
const SAMPLE = '#1a4f9c'
const MAX_STACKS = 500

// By trace number: its `/api/system` summary (`present` false when it has none).
const systems = new Map()
const stacks = new Map()

// Fetches the summary of each ready trace not asked yet.
export async function loadSystems(traces) {
  await Promise.all(traces.filter(t => t.state === 'ready' && !systems.has(t.trace)).map(async t => {
    try {
      systems.set(t.trace, await api(`/api/system?trace=${t.trace}`))
    } catch (err) {
      systems.set(t.trace, { present: false, error: String(err.message || err) })
    }
  }))
  state.systems = Object.fromEntries(systems)
}

export function systemOf(trace) {
  const s = systems.get(trace)
  return s && s.present ? s : null
}

// Whether thread `tid` of `trace` has a band: it has switches or samples.
export function hasBand(trace, tid) {
  const s = systemOf(trace)
  return !!s && s.threads.includes(tid)
}

// The group line's words on the system context: what it held and what the viewer left out.
export function systemText(trace) {
  const s = systemOf(trace)
  if (!s) return ''
  const n = x => x.toLocaleString('en')
  return ` · system: ${n(s.switches)} switches, ${n(s.samples)} CPU samples` +
    (s.dropped ? ` · ${n(s.dropped)} switches, samples and heap totals past the viewer's cap (${n(s.max_kept)}) not shown` : '') +
    (s.stacks_dropped ? ` · ${n(s.stacks_dropped)} samples without their stacks (cap)` : '') +
    (s.read_error ? ` · system blocks read up to: ${s.read_error}` : '')
}

// The band's top on a thread track.
export const bandTop = track => track.height - SYS_ROW

// Draws the band: intervals (a pixel of narrower ones in the colour of what most of its time
// was), then the samples' ticks.
export function drawBand(track, g, xOf) {
  const c = track.canvas
  const d = track.data && track.data.system
  if (!d) return 0
  const y = bandTop(track)
  let blocked = 0, preempted = 0
  for (const it of d.intervals) {
    const x0 = Math.max(-1, xOf(c, it[0]))
    const x1 = Math.min(c.width + 1, Math.max(xOf(c, it[1]), x0 + 1))
    const pre = it[2] < 0 ? it[4] * 2 > it[3] : it[2] === 1
    if (pre) preempted++
    else blocked++
    g.fillStyle = pre ? PREEMPTED : BLOCKED
    g.fillRect(x0, y + 2, x1 - x0, SYS_ROW - 4)
  }
  g.fillStyle = SAMPLE
  for (const s of d.samples) {
    const x = xOf(c, s[0])
    const w = s.length > 2 ? Math.max(1, xOf(c, s[1]) - x) : 1
    g.fillRect(Math.round(x), y, w, SYS_ROW)
  }
  c.dataset.blocked = String(blocked)
  c.dataset.preempted = String(preempted)
  c.dataset.samples = String(d.samples.length)
  return d.intervals.length + d.samples.length
}

// What the band holds at canvas pixel `x`: the nearest sample within 4 pixels, else the interval.
export function bandHit(track, x, xOf) {
  const d = track.data && track.data.system
  if (!d) return undefined
  const c = track.canvas
  let best, dist = 5
  for (const s of d.samples) {
    const x0 = xOf(c, s[0])
    const x1 = s.length > 2 ? xOf(c, s[1]) : x0
    const away = x < x0 ? x0 - x : x > x1 ? x - x1 : 0
    if (away < dist) [best, dist] = [s, away]
  }
  if (best) return { sample: best }
  for (const it of d.intervals) {
    if (x >= xOf(c, it[0]) - 1 && x <= xOf(c, it[1]) + 1) return { interval: it }
  }
  return undefined
}

// A sample's stack, innermost first (cached, at most MAX_STACKS).
async function stackOf(track, place) {
  const key = `${track.trace}/${track.tid}/${place}`
  let s = stacks.get(key)
  if (!s) {
    s = api(`/api/stack?trace=${track.trace}&tid=${track.tid}&index=${place}`)
    if (stacks.size >= MAX_STACKS) stacks.clear()
    stacks.set(key, s)
  }
  return s
}

// The words for what `bandHit` found; a sample's stack is fetched.
export async function describe(track, hit) {
  const at = t => formatNs(t - state.span.start)
  if (hit.interval) {
    const it = hit.interval
    if (it[2] < 0) {
      return `${-it[2]} off-CPU interval${it[2] === -1 ? '' : 's'} near ${at(it[0])}: ${formatNs(it[3])} off the CPU (${formatNs(it[4])} preempted)`
    }
    return `${it[2] === 1 ? 'preempted' : 'blocked'} for ${formatNs(it[1] - it[0])} at ${at(it[0])}`
  }
  const s = hit.sample
  if (s.length > 2) return `${-s[2]} CPU samples near ${at(s[0])}; zoom in to see each`
  const st = await stackOf(track, s[1])
  const frames = st.frames.map(f => f.function + (f.inlined ? ' (inlined)' : ''))
  return `CPU sample at ${at(s[0])}\n${frames.join('\n')}` + (st.warnings.length ? `\n(${st.warnings.join('; ')})` : '')
}

// A tooltip over the band while the mouse is on it.
export function listenBand(trackAt, xOf) {
  const tip = document.createElement('div')
  tip.id = 'sys-tip'
  tip.hidden = true
  document.body.appendChild(tip)
  let asked = 0
  document.addEventListener('mousemove', async e => {
    const canvas = e.target.closest && e.target.closest('canvas')
    const track = canvas && trackAt(canvas)
    const r = canvas && canvas.getBoundingClientRect()
    if (!track || !track.sys || e.clientY - r.top < bandTop(track)) {
      tip.hidden = true
      return
    }
    const hit = bandHit(track, (e.clientX - r.left) * canvas.width / r.width, xOf)
    if (!hit) {
      tip.hidden = true
      return
    }
    const n = ++asked
    tip.style.left = `${e.pageX + 12}px`
    tip.style.top = `${e.pageY + 12}px`
    try {
      const text = await describe(track, hit)
      if (n !== asked) return
      tip.textContent = text
      tip.dataset.kind = hit.sample ? 'sample' : 'interval'
      tip.hidden = false
    } catch (err) {
      tip.textContent = String(err.message || err)
      tip.hidden = false
    }
  })
}

// The selected slice's system rows: its CPU time, switches, samples, allocations.
export function sliceRows(s) {
  const sys = s.system
  if (!sys) return []
  const rows = [
    ['on CPU', formatNs(sys.on_cpu_ns)],
    ['off CPU', `${formatNs(sys.off_cpu_ns)} (blocked ${formatNs(sys.blocked_ns)}, preempted ${formatNs(sys.preempted_ns)})`],
    ['switches', sys.switches.toLocaleString('en')],
    ['CPU samples', sys.samples.toLocaleString('en')],
  ]
  const a = sys.allocations
  if (a && a.allocs !== null) rows.push(['allocations', `${Number(a.allocs).toLocaleString('en')} (${Number(a.bytes).toLocaleString('en')} bytes)`])
  return rows
}

// Whether a point is a `phosphor/scope_alloc` event of a trace with system context: data for the
// details, not an event to show.
export function hiddenPoint(trace, name) {
  return name === 'scope_alloc' && !!systemOf(trace)
}
