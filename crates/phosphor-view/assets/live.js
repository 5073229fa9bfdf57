// Live mode's parts of the page (`phosphor record --view`): the notice shown until a program
// connects (where the recorder listens), what a panel's answer covers of a recording still going
// on, and panels kept current: a panel computed while traces were live is marked stale, with a
// refresh control, once more data has come; once a trace is indexed, the panels are computed
// again from its index and a slice shown from the live view is shown again from the index.

import { $, api, select, state, status } from './view.js'
import { formatNs } from './format.js'
import { panel } from './panels.js'

// The live traces' events now ({trace: events}), kept with a panel when it is computed.
export function liveSnapshot() {
  const out = {}
  for (const t of state.traces) if (t.state === 'live') out[t.trace] = t.events
  return out
}

// What an answer (`/api/search`, `/api/stats`) covers of the live traces it counted, from its
// `live` member: all recorded so far, or only the newest part once the live view has dropped
// older records.
export function coverNote(r) {
  const cover = (r && r.live) || []
  if (!cover.length) return ''
  const at = ns => formatNs(Math.max(0, ns - state.span.start))
  return ' · ' + cover.map(c => c.dropped
    ? `live trace ${c.trace}: its last ${formatNs(c.end_ns - c.from_ns)} only (${at(c.from_ns)} – ${at(c.end_ns)}; the live view dropped ${c.dropped.toLocaleString('en')} older records, the file has them)`
    : `live trace ${c.trace}: as recorded so far (to ${at(c.end_ns)})`).join('; ') + (cover.some(c => c.skipped) ? '; events skipped while the view lagged are not counted' : '')
}

// Before any program has connected: where the recorder listens, instead of a blank page.
function showWaiting(list) {
  let w = $('waiting')
  if (!state.live || list.length) {
    if (w) w.remove()
    return
  }
  if (!w) {
    w = document.createElement('div')
    w.id = 'waiting'
    $('tracks').appendChild(w)
  }
  const at = state.listening || 'the address given to --listen'
  const text = `Waiting for a traced program to connect to ${at}`
  if (w.dataset.text === text) return
  w.dataset.text = text
  w.innerHTML = ''
  const h = document.createElement('h3')
  h.textContent = text
  const p = document.createElement('p')
  p.className = 'hint'
  p.textContent = `phosphor record is listening on ${at}: a program that streams its trace there (a TCP sink, Sink::Tcp) ` +
    'appears here as soon as its first events come, drawn as it is recorded; no reload is needed.'
  w.append(h, p)
}

// The panel's computation again, where it is shown: the search's list, or the panel's own.
function redo() {
  const again = panel.kind === 'search' ? state.searchAgain : panel.again
  if (again) again().catch(err => status(String(err.message || err)))
}

// Marks the panel stale: more has been recorded since it was computed.
function markStale(more) {
  let s = $('panel-stale')
  if (!s) {
    s = document.createElement('div')
    s.id = 'panel-stale'
    const text = document.createElement('span')
    const b = document.createElement('button')
    b.type = 'button'
    b.textContent = 'refresh'
    b.title = 'compute this panel again from what has been recorded now'
    b.onclick = () => {
      s.remove()
      redo()
    }
    s.append(text, b)
    $('side').insertBefore(s, $('results'))
  }
  s.firstChild.textContent = `Recorded since this was computed: ${more.toLocaleString('en')} more events. `
  $('results').classList.add('outdated')
}

export function clearStale() {
  if ($('panel-stale')) $('panel-stale').remove()
  $('results').classList.remove('outdated')
}

// The slice shown in the details from the live view of a trace just indexed, shown again from
// its index (its number there differs): found by its place, times and name.
async function reselect(indexed) {
  const s = state.shownSlice
  if (!s || !s.live || !indexed.has(s.trace)) return
  const d = $('details')
  const track = state.tracks.find(k => k.trace === s.trace &&
    (s.async !== null && s.async !== undefined ? k.kind === 'async' && k.async === s.async : k.kind === 'thread' && k.tid === s.tid))
  const who = s.async !== null && s.async !== undefined ? `async=${s.async}` : `tid=${s.tid}`
  const r = track && await api(`/api/slices?trace=${s.trace}&${who}&start=${s.start_ns}&end=${s.end_ns}&px=100`)
  const item = r && r.levels.flat().find(x => x[2] >= 0 && x[0] === s.start_ns && x[1] === s.end_ns && r.names[x[2]] === s.name)
  if (item) {
    await select(track, { slice: item })
    return
  }
  d.dataset.live = 'stale'
  const note = document.createElement('p')
  note.className = 'problem'
  note.textContent = 'shown from the live view: the trace is indexed now, click the slice again for its details from the index'
  d.prepend(note)
}

// Each new list of traces (`/api/traces`), after the tracks are made again: `was` the list
// before.
export async function tracesChanged(was, list) {
  showWaiting(list)
  const before = new Map(was.map(t => [t.trace, t.state]))
  const indexed = new Set(list.filter(t => t.state === 'ready' && before.get(t.trace) === 'live').map(t => t.trace))
  const busy = $('results').dataset.busy === '1'
  if (indexed.size) {
    // Computed from the live view: computed again from the index.
    if (panel.kind && panel.live && Object.keys(panel.live).some(n => indexed.has(Number(n)))) {
      clearStale()
      redo()
    }
    await reselect(indexed)
    return
  }
  if (!panel.kind || busy || !panel.live) return
  let more = 0
  for (const t of list) if (t.state === 'live') more += t.events - (panel.live[t.trace] || 0)
  if (more > 0) markStale(more)
}
