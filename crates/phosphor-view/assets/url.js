// The view in the page's URL, so that a link reopens it: `#view=S,E` (the window, in ns from the
// traces' start), `slice=T:I` (slice I of trace T selected), `range=A,B` (the selected range, in
// ns from the start). Written a moment after each change (browsers limit how often the history
// may be replaced); read once the traces are indexed.

import { api, select, state } from './view.js'

let timer = null
// Whether the URL was read: until then it is left as it came.
let read = false

// Writes the view into the URL, 200 ms after the last call.
export function writeUrl() {
  if (!read) return
  clearTimeout(timer)
  timer = setTimeout(() => {
    const o = state.span.start
    const parts = [`view=${Math.round(state.view.start - o)},${Math.round(state.view.end - o)}`]
    if (state.selected) parts.push(`slice=${state.selected.trace}:${state.selected.index}`)
    if (state.selection) parts.push(`range=${Math.round(state.selection[0] - o)},${Math.round(state.selection[1] - o)}`)
    history.replaceState(null, '', `#${parts.join('&')}`)
  }, 200)
}

// The pair of numbers of `text` ("12,40"), if it is one.
function pair(text) {
  const v = (text || '').split(',').map(Number)
  return v.length === 2 && v.every(Number.isFinite) ? v : null
}

// Shows what the URL names: its window, its range and its slice (selected as if clicked).
export async function readUrl() {
  const q = new URLSearchParams(location.hash.slice(1))
  const o = state.span.start
  const range = pair(q.get('range'))
  if (range) state.selection = [range[0] + o, range[1] + o]
  const slice = /^(\d+):(\d+)$/.exec(q.get('slice') || '')
  if (slice) {
    const [trace, index] = [Number(slice[1]), Number(slice[2])]
    try {
      const s = await api(`/api/slice?trace=${trace}&index=${index}`)
      const track = state.tracks.find(t => t.trace === trace &&
        (s.async === null ? t.kind === 'thread' && t.tid === s.tid : t.kind === 'async' && t.async === s.async))
      if (track) await select(track, { slice: [s.start_ns, s.end_ns, -1, index, 0] })
    } catch (err) {
      console.warn(`the URL's slice ${trace}:${index}: ${err.message || err}`)
    }
  }
  const view = pair(q.get('view'))
  if (view) state.show(view[0] + o, view[1] + o)
  read = true
}
