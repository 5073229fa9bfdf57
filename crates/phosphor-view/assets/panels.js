// The side panels of Phosphor's timeline page: search, and the range bar over the panels; the
// statistics table with a row's histogram is in table.js, the flame graph in flame.js. All come
// from the index-backed endpoints (docs/VIEW-API.md), which cover indexed traces only: while
// traces are live, each says so.
//
// A panel's answer may take seconds (a range's statistics on a big trace): `run` dims what the
// panel showed at once (it is no longer current), shows "computing…" past 100 ms, and drops an
// answer a newer request overtook. A panel of the selected range follows it: a new range, or the
// range cleared (Esc, or its "clear"), computes it again.

import { $, api, formatNs, schedule, select, state, status } from './view.js'
import { formatExact, setTheme } from './format.js'
import { cssWidth, draw, drawRuler } from './draw.js'
import { showStats } from './table.js'
import { redrawFlame, searchChanged, showFlame } from './flame.js'
import { listenCompare } from './compare.js'
import { showTasks } from './tasks.js'
import { clearStale, coverNote, liveSnapshot } from './live.js'

// The panel in #results: its kind ('search', 'stats', 'flame'), how to compute it again, the
// range it was computed for, and the newest request's number.
export const panel = { kind: null, again: null, range: null, gen: 0 }

// The selection as the endpoints' `&start=&end=` ('' when none).
export const rangeQuery = () => (state.selection ? `&start=${Math.floor(state.selection[0])}&end=${Math.ceil(state.selection[1])}` : '')

// Computes a panel: `compute()` fetches, then `render(answer, root)` draws unless a newer request
// came meanwhile. The old results are marked stale at once; "computing…" shows past 100 ms.
export async function run(kind, again, compute, render) {
  const gen = ++panel.gen
  // The live traces' data it is computed from: live.js marks it stale once more has come.
  Object.assign(panel, { kind, again, range: state.selection ? [...state.selection] : null, live: liveSnapshot() })
  clearStale()
  const root = $('results')
  // The flame graph's tooltip goes with it.
  if ($('flame-tip')) $('flame-tip').hidden = true
  root.classList.add('stale')
  root.dataset.busy = '1'
  const timer = setTimeout(() => {
    if (gen !== panel.gen || $('busy')) return
    const b = document.createElement('div')
    b.id = 'busy'
    b.innerHTML = '<span class="spinner"></span> computing…'
    $('side').insertBefore(b, root)
  }, 100)
  try {
    const answer = await compute()
    if (gen !== panel.gen) return
    root.innerHTML = ''
    render(answer, root)
    root.dataset.gen = String(gen)
  } finally {
    clearTimeout(timer)
    if (gen === panel.gen) {
      root.classList.remove('stale')
      root.dataset.busy = ''
      if ($('busy')) $('busy').remove()
    }
  }
}

const problem = err => status(String(err.message || err))

// The range bar: the selected range, "zoom to" and "clear".
function rangeBar() {
  const bar = $('range-bar')
  const s = state.selection
  bar.hidden = !s
  if (!s) return
  const o = state.span.start
  bar.querySelector('.range').textContent = `range ${formatExact(s[0] - o)} – ${formatExact(s[1] - o)} (${formatNs(s[1] - s[0])})`
}

// The selection changed (a range dragged, cleared, Esc): the bar follows, and a panel of the
// range is computed again for the new one.
function selectionChanged() {
  rangeBar()
  const now = state.selection ? state.selection.join() : ''
  const was = panel.range ? panel.range.join() : ''
  if (panel.again && now !== was) panel.again().catch(problem)
}

// Search: the answer's hits in time order; next and previous walk them (fetching more at the end).
const search = { q: '', hits: [], total: 0, at: -1, nextAfter: null, asked: 0 }

// The track a hit is on: its thread's, or its async track's.
function trackOf(h) {
  return state.tracks.find(k => k.trace === h.trace &&
    (h.async !== null && h.async !== undefined ? k.kind === 'async' && k.async === h.async : k.kind === 'thread' && k.tid === h.tid))
}

// The hits by track (`trace/tid` or `trace/aN`), for the ticks the tracks draw.
function indexHits() {
  const by = new Map()
  for (const h of search.hits) {
    const key = h.async !== null && h.async !== undefined ? `${h.trace}/a${h.async}` : `${h.trace}/${h.tid}`
    if (!by.has(key)) by.set(key, [])
    by.get(key).push(h)
  }
  search.byTrack = by
}

// A search reads every record (seconds on a big trace): the box says so meanwhile, and the hits
// come through `run` (the list's progress mark) unless the flame graph is shown, which stays, its
// matching frames highlighted. A search overtaken by a newer one is dropped.
async function runSearch(q) {
  const asked = ++search.asked
  $('search-at').textContent = 'searching…'
  const take = r => takeHits(q, r)
  const get = () => api(`/api/search?q=${encodeURIComponent(q)}&limit=1000`)
  if (panel.kind === 'flame' && $('flame')) {
    const r = await get()
    if (asked !== search.asked) return
    take(r)
    searchChanged()
  } else {
    let answer = null
    await run('search', null, get, r => {
      answer = r
      take(r)
      renderResults()
    })
    if (!answer || asked !== search.asked) return
  }
  if (search.hits.length) await go(0)
  else {
    $('search-at').textContent = '0 found'
    schedule()
  }
}

function takeHits(q, r) {
  Object.assign(search, { q, hits: r.hits, total: r.total, at: -1, nextAfter: r.next_after, names: r.names })
  search.note = liveNote(r)
  search.window = null
  indexHits()
}

// The search again, where it is shown, without moving the view: live data came, or a live trace
// was indexed (its hits are numbered anew).
async function searchAgain() {
  const q = search.q
  if (!q) return
  await run('search', null, () => api(`/api/search?q=${encodeURIComponent(q)}&limit=1000`), r => {
    if (q !== search.q) return
    takeHits(q, r)
    $('search-at').textContent = `${r.total} found`
    renderResults()
  })
  schedule()
}

function trackName(h) {
  const t = trackOf(h)
  return t ? t.name : h.async !== null && h.async !== undefined ? `async track ${h.async}` : `thread ${h.tid}`
}

function renderResults() {
  const root = $('results')
  root.innerHTML = ''
  root.dataset.total = String(search.total)
  const head = document.createElement('p')
  const kinds = (search.names || []).map(n => `${n.name} (${n.count})`).join(', ')
  head.textContent = `${search.total} found for “${search.q}”` + (kinds ? `: ${kinds}` : '') +
    (search.total > search.hits.length ? ` (the first ${search.hits.length} listed and marked)` : '') + search.note
  const ol = document.createElement('ol')
  search.hits.forEach((h, i) => {
    const li = document.createElement('li')
    li.textContent = `${formatExact(h.start_ns - state.span.start)} · ${trackName(h)} · ${h.name}`
    li.onclick = () => go(i)
    if (i === search.at) li.className = 'at'
    ol.appendChild(li)
  })
  root.append(head, ol)
}

// The window that shows a hit centred: the current zoom if the hit fits it, else the hit and as
// much again on either side; narrower where the current zoom would reach past the trace.
function hitWindow(h) {
  const dur = h.end_ns - h.start_ns
  const mid = (h.start_ns + h.end_ns) / 2
  let span = state.view.end - state.view.start
  if (span < 1.2 * dur) span = 3 * dur
  const room = 2 * Math.min(mid - state.span.start, state.span.end - mid)
  span = Math.max(Math.min(span, room), 1.2 * dur, 1000)
  return [mid - span / 2, mid + span / 2]
}

async function go(i) {
  if (i >= search.hits.length && search.nextAfter !== null) {
    const r = await api(`/api/search?q=${encodeURIComponent(search.q)}&limit=1000&after=${search.nextAfter}`)
    const seen = new Set(search.hits.map(h => `${h.trace}:${h.kind}:${h.index}`))
    search.hits.push(...r.hits.filter(h => !seen.has(`${h.trace}:${h.kind}:${h.index}`)))
    search.nextAfter = r.next_after
    indexHits()
    if (panel.kind === 'search') renderResults()
  }
  if (i < 0 || i >= search.hits.length) return
  search.at = i
  const h = search.hits[i]
  $('search-at').textContent = `${i + 1} of ${search.total}`
  if (panel.kind === 'search') {
    for (const li of $('results').querySelectorAll('li')) li.className = ''
    const li = $('results').querySelectorAll('li')[i]
    if (li) {
      li.className = 'at'
      li.scrollIntoView({ block: 'nearest' })
    }
  }
  const [a, b] = hitWindow(h)
  state.show(a, b)
  const track = trackOf(h)
  if (!track) return
  if (track.label) track.label.scrollIntoView({ block: 'nearest' })
  if (h.kind === 'slice') await select(track, { slice: [h.start_ns, h.end_ns, -1, h.index, 0], name: h.name })
  else await select(track, { point: [h.start_ns, -1, h.index, 0], name: h.name })
}

// Every hit in the visible window, as the pixel columns of each track and level that hold one
// (`search.window`, drawn as ticks by draw.js), when the listed hits are not all there are: asked
// after each refresh while a search is on, one request at a time (the newest view next).
let ticking = false
let tickAgain = false
async function windowTicks() {
  if (!search.q || !search.total || search.nextAfter === null) return
  if (ticking) {
    tickAgain = true
    return
  }
  ticking = true
  try {
    do {
      tickAgain = false
      const track = state.tracks.find(t => t.kind === 'thread' || t.kind === 'async')
      if (!track) return
      const px = Math.max(1, Math.min(8192, Math.round(cssWidth(track.canvas))))
      const s = Math.floor(state.view.start), e = Math.ceil(state.view.end)
      const q = search.q
      const r = await api(`/api/search?q=${encodeURIComponent(q)}&start=${s}&end=${e}&px=${px}`)
      if (q !== search.q) continue
      const by = new Map()
      for (const t of r.ticks) {
        const key = t.async !== null ? `${t.trace}/a${t.async}` : `${t.trace}/${t.tid}`
        if (!by.has(key)) by.set(key, [])
        by.get(key).push(t)
      }
      search.window = { start: s, end: e, px, by }
      for (const t of state.tracks) if (t.kind === 'thread' || t.kind === 'async') draw(t)
    } while (tickAgain)
  } catch (err) {
    problem(err)
  } finally {
    ticking = false
  }
}

// Wires the search box, the range bar and the panels' buttons.
export function listenPanels() {
  state.search = search
  state.searchAgain = searchAgain
  state.onSelection = selectionChanged
  state.onRefresh = windowTicks
  $('stats-button').onclick = () => showStats().catch(problem)
  $('flame-button').onclick = () => showFlame().catch(problem)
  $('tasks-button').onclick = () => showTasks().catch(problem)
  // Dark or light: kept for the next visit; every canvas drawn again in the theme's colours.
  $('theme-button').onclick = () => {
    setTheme(document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark', true)
    for (const t of state.tracks) draw(t)
    drawRuler()
    redrawFlame()
  }
  listenCompare()
  listenSplitter()
  $('range-zoom').onclick = () => {
    const s = state.selection
    if (!s) return
    const pad = Math.max(1, (s[1] - s[0]) / 10)
    state.show(s[0] - pad, s[1] + pad)
  }
  $('range-clear').onclick = () => {
    state.selection = null
    schedule()
    selectionChanged()
  }
  $('search-form').addEventListener('submit', e => {
    e.preventDefault()
    const q = $('search').value.trim()
    if (!q) {
      // An empty search: no hits, no ticks.
      Object.assign(search, { q: '', hits: [], total: 0, at: -1, nextAfter: null, byTrack: new Map(), window: null })
      search.asked++
      $('search-at').textContent = ''
      schedule()
      return
    }
    if (q === search.q && search.hits.length) go(search.at + 1)
    else runSearch(q).catch(problem)
  })
  $('search').addEventListener('keydown', e => {
    if (e.key === 'Enter' && e.shiftKey) {
      e.preventDefault()
      go(search.at - 1)
    }
  })
  $('next').onclick = () => go(search.at + 1)
  $('prev').onclick = () => go(search.at - 1)
  rangeBar()
}

// The bar between the timeline and the panels: dragged, it sets the panels' width (300 px to 70%
// of the page); the tracks follow (their resize observer), the flame graph is drawn again.
function listenSplitter() {
  const bar = $('splitter')
  let on = false
  bar.addEventListener('mousedown', e => {
    on = true
    bar.classList.add('on')
    e.preventDefault()
  })
  document.addEventListener('mousemove', e => {
    if (!on) return
    const width = Math.max(300, Math.min(0.7 * window.innerWidth, window.innerWidth - e.clientX - 3))
    $('side').style.width = `${Math.round(width)}px`
  })
  document.addEventListener('mouseup', () => {
    if (!on) return
    on = false
    bar.classList.remove('on')
    if (panel.kind === 'flame') redrawFlame()
  })
}

// The thread tracks by trace and tid, for the panels' names of threads.
export function threadName(trace, tid) {
  const t = state.tracks.find(k => k.kind === 'thread' && k.trace === trace && k.tid === tid)
  return t ? t.name : `thread ${tid}`
}

// Shows slice `s` ({index, tid, start_ns, end_ns}) of trace `trace`, selected.
export async function showSlice(trace, s) {
  const pad = (s.end_ns - s.start_ns) * 2 + 1000
  state.show(s.start_ns - pad, s.end_ns + pad)
  const track = state.tracks.find(t => t.kind === 'thread' && t.trace === trace && t.tid === s.tid)
  if (track) await select(track, { slice: [s.start_ns, s.end_ns, -1, s.index, 0] })
}

// Whether `name` matches the search box's pattern (a glob with `*` or `?`, else a substring in
// either case), as the server matches it.
export function matchesSearch(name) {
  const q = search.q
  if (!q) return false
  if (!/[*?]/.test(q)) return name.toLowerCase().includes(q.toLowerCase())
  const re = new RegExp(`^${q.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`)
  return re.test(name)
}

// What an answer of the search, statistics or flame graph covers of the live traces (live.js).
export function liveNote(r) {
  return coverNote(r)
}
