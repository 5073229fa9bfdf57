// The timeline's mouse and keys, as in Perfetto and Tracy: W/S zoom about the pointer, A/D pan,
// ctrl+wheel zooms about the pointer, the wheel scrolls the tracks, drag pans, shift-drag selects
// a range, F fits the selection, M marks it, 0 (or Home) shows everything, Esc clears, ? lists the
// keys.
// Hovering a slice shows a tooltip: its name, duration, self time and arguments.

import { $, clamp, clearSelection, eventRows, list, pan, schedule, select, showWindow, sizeCanvases, sliceDetails, state, status, timeAt, zoom } from './view.js'
import { LEVEL_HEIGHT, POINT_ROW, drawRuler, extent, xOf, cssWidth, runText } from './draw.js'
import { SYS_ROW, hiddenPoint } from './system.js'
import { formatBytes, formatExact, formatNs } from './format.js'

export const KEYS = [
  ['W / S', 'zoom in / out about the pointer'],
  ['A / D', 'pan left / right'],
  ['ctrl + wheel', 'zoom about the pointer'],
  ['wheel', 'scroll the tracks (shift + wheel pans)'],
  ['drag', 'pan'],
  ['shift + drag', 'select a range'],
  ['click', 'select a slice'],
  ['F', 'fit the selected slice or range (live, with nothing selected: follow the newest data)'],
  ['0 or Home', 'show the whole trace'],
  ['M', 'mark the selected slice or range (again: unmark it; nothing selected: unmark all)'],
  ['Esc', 'clear the selection'],
  ['click a label', 'collapse or expand the track'],
  ['?', 'show or hide this list'],
]

// What is drawn at the mouse event `e` on `track`: a slice, a run of narrow ones, or a point (the
// nearest within 4 pixels), from the data the track was drawn from.
export function hitAt(track, e) {
  const c = track.canvas
  const r = c.getBoundingClientRect()
  const x = (e.clientX - r.left) * cssWidth(c) / r.width
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
  // A collapsed track: the deepest item under the pointer, of any level.
  const levels = track.collapsed ? [...d.slices.levels.keys()].reverse() : [Math.floor(y / LEVEL_HEIGHT) - d.slices.from]
  for (const i of levels) {
    for (const it of d.slices.levels[i] || []) {
      const [x0, x1] = extent(c, it)
      if (x >= x0 - 1 && x <= x1 + 1) {
        const level = i + d.slices.from
        return it[2] < 0 ? { merged: it, level } : { slice: it, name: d.slices.names[it[2]] ?? '', level }
      }
    }
  }
  return undefined
}

const trackOf = canvas => state.tracks[Number(canvas.dataset.track)]

// The tooltip's lines for `hit`; a slice's self time and arguments come from its details.
async function tipLines(track, hit) {
  if (hit.merged) {
    const m = hit.merged
    return [runText(-m[2], m.length > 4 ? track.data.slices.names[m[4]] : ''), `each narrower than a pixel, over ${formatNs(m[1] - m[0])}; zoom in to see them`]
  }
  if (hit.point) return [hit.name || `${-hit.point[2]} points`, `at ${formatExact(hit.point[0] - state.span.start)}`]
  const s = await sliceDetails(track.trace, hit.slice[3])
  const lines = [s.name, `duration ${formatExact(s.duration_ns)}`]
  if (s.self_ns !== null) lines.push(`self ${formatExact(s.self_ns)}`)
  lines.push(`start ${formatExact(s.start_ns - state.span.start)}`)
  for (const [k, v] of eventRows(s.event || {})) if (!['category', 'source'].includes(k)) lines.push(`${k} ${v}`)
  return lines
}

// A counter's (or the heap's) tooltip at the mouse event `e`: the value there since its sample,
// or the range of a pixel's several samples.
function counterTip(track, e) {
  const items = track.data && track.data.samples && track.data.samples.samples
  if (!items || !items.length) return null
  const t = timeAt(track.canvas, e.clientX)
  let at = null
  for (const s of items) {
    if (s[0] > t) break
    at = s
  }
  if (!at) return null
  const v = x => (track.kind === 'heap' ? formatBytes(x) : typeof x === 'number' ? x.toLocaleString('en') : String(x))
  const lines = [track.name, `${v(at[5])} since ${formatExact(at[0] - state.span.start)}`]
  if (at[2] > 1) lines.push(`${at[2].toLocaleString('en')} samples in this pixel, ${v(at[3])} to ${v(at[4])}`)
  return lines
}

function listenTips() {
  const tip = document.createElement('div')
  tip.id = 'tip'
  tip.hidden = true
  document.body.appendChild(tip)
  let asked = 0
  let shown = null
  const hide = () => {
    tip.hidden = true
    shown = null
    asked++
  }
  document.addEventListener('mousemove', async e => {
    const canvas = e.target.closest && e.target.closest('#tracks canvas')
    const track = canvas && trackOf(canvas)
    const counter = track && !e.buttons && (track.kind === 'counter' || track.kind === 'heap') && counterTip(track, e)
    if (counter) {
      tip.style.left = `${Math.min(e.pageX + 14, window.innerWidth - 320)}px`
      tip.style.top = `${e.pageY + 14}px`
      tip.textContent = counter.join('\n')
      tip.dataset.complete = '1'
      tip.hidden = false
      shown = null
      asked++
      return
    }
    const hit = track && !e.buttons && hitAt(track, e)
    if (!hit) return hide()
    tip.style.left = `${Math.min(e.pageX + 14, window.innerWidth - 320)}px`
    tip.style.top = `${e.pageY + 14}px`
    const key = `${track.trace}/${hit.slice ? hit.slice[3] : hit.point ? `p${hit.point[2]}` : `m${hit.merged[0]}`}`
    if (key === shown) return
    shown = key
    const n = ++asked
    // The name at once; the rest when the details come.
    tip.textContent = hit.slice ? hit.name : ''
    tip.dataset.complete = ''
    tip.hidden = !hit.slice
    try {
      const lines = await tipLines(track, hit)
      if (n !== asked) return
      tip.textContent = lines.join('\n')
      tip.dataset.complete = '1'
      tip.hidden = false
    } catch (err) {
      if (n === asked) tip.textContent = String(err.message || err)
    }
  })
  document.addEventListener('mouseleave', hide)
  return hide
}

// The list of keys, shown by `?`.
function helpBox() {
  const box = document.createElement('div')
  box.id = 'keys'
  box.hidden = true
  box.append(list('Keys', KEYS))
  document.body.appendChild(box)
  return box
}

// The selected slice, else the selected range.
const selectedExtent = () => (state.selected && state.selected.end !== undefined ? [state.selected.start, state.selected.end] : state.selection)

// `m`: marks the selection (unmarks it if marked); with nothing selected, unmarks all.
function mark() {
  const s = selectedExtent()
  if (!s) state.marks = []
  else {
    const i = state.marks.findIndex(m => m[0] === s[0] && m[1] === s[1])
    if (i >= 0) state.marks.splice(i, 1)
    else state.marks.push([s[0], s[1]])
  }
  schedule()
}

// The selected slice, else the selected range, fills the view (with a margin of a tenth).
function fit() {
  const s = selectedExtent()
  if (!s) return false
  const pad = Math.max(1, (s[1] - s[0]) / 10)
  state.show(s[0] - pad, s[1] + pad)
  return true
}

export function listen() {
  const help = helpBox()
  const hideTip = listenTips()
  // Where the pointer last was over the timeline (W and S zoom about it).
  let pointer = null
  let drag = null
  const down = e => {
    const canvas = e.target.closest('canvas')
    if (!canvas) return
    hideTip()
    drag = { x: e.clientX, canvas, view: { ...state.view }, moved: false, select: e.shiftKey, from: timeAt(canvas, e.clientX) }
  }
  document.addEventListener('mousedown', down)
  document.addEventListener('mousemove', e => {
    const over = e.target.closest && e.target.closest('#timeline canvas')
    pointer = over ? { canvas: over, x: e.clientX } : null
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
    state.setFollowing(false)
    const r = drag.canvas.getBoundingClientRect()
    const d = (e.clientX - drag.x) / r.width * (drag.view.end - drag.view.start)
    state.view = clamp({ start: drag.view.start - d, end: drag.view.end - d })
    schedule()
  })
  document.addEventListener('mouseup', e => {
    const d = drag
    drag = null
    // A range dragged: the panels follow it.
    if (d && d.moved && d.select && state.onSelection) state.onSelection()
    if (!d || d.moved) return
    const track = trackOf(d.canvas)
    const hit = track && hitAt(track, e)
    if (hit) select(track, hit).catch(err => status(String(err.message || err)))
  })
  document.addEventListener('wheel', e => {
    const canvas = e.target.closest && e.target.closest('#timeline canvas')
    if (!canvas) return
    // The plain wheel scrolls the tracks, as on any page.
    if (e.ctrlKey || e.metaKey) zoom(Math.exp(e.deltaY / 300), timeAt(canvas, e.clientX))
    else if (e.shiftKey) pan(e.deltaY / 1000)
    else if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) pan(e.deltaX / 1000)
    else return
    e.preventDefault()
  }, { passive: false })
  // A search leaves the box: the keys drive the timeline again.
  $('search-form').addEventListener('submit', () => $('search').blur())
  document.addEventListener('keydown', e => {
    if (e.target.closest && e.target.closest('input')) {
      if (e.key === 'Escape' || (e.key === 'Enter' && e.shiftKey)) e.target.blur()
      return
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key
    const at = pointer && pointer.canvas.isConnected ? timeAt(pointer.canvas, pointer.x) : undefined
    if (k === 'w') zoom(0.8, at)
    else if (k === 's') zoom(1.25, at)
    else if (k === 'a') pan(-0.1)
    else if (k === 'd') pan(0.1)
    else if (k === 'f') {
      if (!fit() && state.live) {
        state.setFollowing(!state.following)
        schedule()
      }
    } else if (k === '0' || k === 'Home') state.show(state.span.start, state.span.end)
    else if (k === 'm') mark()
    else if (k === '?') help.hidden = !help.hidden
    else if (k === 'Escape') {
      if (!help.hidden) help.hidden = true
      else clearSelection()
    } else return
    e.preventDefault()
  })
  window.addEventListener('resize', () => {
    sizeCanvases()
    schedule()
  })
  // The tracks' scrollbar comes and goes with their height: the ruler follows their width.
  new ResizeObserver(() => {
    sizeCanvases()
    schedule()
  }).observe($('tracks'))
}
