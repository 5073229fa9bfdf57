// The side panels of Phosphor's timeline page: search, the statistics table with a row's
// histogram and slowest occurrences, and the flame graph, all from the index-backed endpoints
// (docs/VIEW-API.md), which cover indexed traces only: while traces are live, each says so.

import { $, api, color, formatNs, select, state, status } from './view.js'

// Search: the answer's hits in time order; next and previous walk them (fetching more at the end).
const search = { q: '', hits: [], total: 0, at: -1, nextAfter: null }

async function runSearch(q) {
  const r = await api(`/api/search?q=${encodeURIComponent(q)}&limit=200`)
  Object.assign(search, { q, hits: r.hits, total: r.total, at: -1, nextAfter: r.next_after, names: r.names })
  search.note = liveNote()
  renderResults()
  if (search.hits.length) await go(0)
  else $('search-at').textContent = '0 found'
}

function threadName(trace, tid) {
  const t = state.tracks.find(k => k.kind === 'thread' && k.trace === trace && k.tid === tid)
  return t ? t.name : `thread ${tid}`
}

function renderResults() {
  const root = $('results')
  root.innerHTML = ''
  root.dataset.total = String(search.total)
  const head = document.createElement('p')
  const kinds = (search.names || []).map(n => `${n.name} (${n.count})`).join(', ')
  head.textContent = `${search.total} found for “${search.q}”` + (kinds ? `: ${kinds}` : '') + search.note
  const ol = document.createElement('ol')
  search.hits.forEach((h, i) => {
    const li = document.createElement('li')
    li.textContent = `${formatNs(h.start_ns - state.span.start)} · ${threadName(h.trace, h.tid)} · ${h.name}`
    li.onclick = () => go(i)
    if (i === search.at) li.className = 'at'
    ol.appendChild(li)
  })
  root.append(head, ol)
}

async function go(i) {
  if (i >= search.hits.length && search.nextAfter !== null) {
    const r = await api(`/api/search?q=${encodeURIComponent(search.q)}&limit=200&after=${search.nextAfter}`)
    const seen = new Set(search.hits.map(h => `${h.trace}:${h.kind}:${h.index}`))
    search.hits.push(...r.hits.filter(h => !seen.has(`${h.trace}:${h.kind}:${h.index}`)))
    search.nextAfter = r.next_after
    renderResults()
  }
  if (i < 0 || i >= search.hits.length) return
  search.at = i
  const h = search.hits[i]
  $('search-at').textContent = `${i + 1} of ${search.total}`
  for (const li of $('results').querySelectorAll('li')) li.className = ''
  const li = $('results').querySelectorAll('li')[i]
  if (li) li.className = 'at'
  // Keep the zoom unless the hit does not fit; centre it.
  const span = Math.max(state.view.end - state.view.start > 4 * (h.end_ns - h.start_ns) ? state.view.end - state.view.start : 4 * (h.end_ns - h.start_ns), 1000)
  const mid = (h.start_ns + h.end_ns) / 2
  state.show(mid - span / 2, mid + span / 2)
  const track = state.tracks.find(k => k.kind === 'thread' && k.trace === h.trace && k.tid === h.tid)
  if (!track) return
  track.canvas.scrollIntoView({ block: 'nearest' })
  if (h.kind === 'slice') await select(track, { slice: [h.start_ns, h.end_ns, -1, h.index, 0] })
  else await select(track, { point: [h.start_ns, -1, h.index, 0], name: h.name })
}

// Wires the search box and the panels' buttons.
export function listenPanels() {
  state.search = search
  $('stats-button').onclick = () => showStats().catch(err => status(String(err.message || err)))
  $('flame-button').onclick = () => showFlame().catch(err => status(String(err.message || err)))
  $('search-form').addEventListener('submit', e => {
    e.preventDefault()
    const q = $('search').value.trim()
    if (!q) return
    if (q === search.q && search.hits.length) go(search.at + 1)
    else runSearch(q).catch(err => status(String(err.message || err)))
  })
  $('search').addEventListener('keydown', e => {
    if (e.key === 'Enter' && e.shiftKey) {
      e.preventDefault()
      go(search.at - 1)
    }
  })
  $('next').onclick = () => go(search.at + 1)
  $('prev').onclick = () => go(search.at - 1)
}

// The statistics panel: per scope path across threads, of the selection or of everything.
const table = { rows: [], sort: 'total_ns', down: true }

async function showStats() {
  const range = state.selection ? `&start=${Math.floor(state.selection[0])}&end=${Math.ceil(state.selection[1])}` : ''
  const r = await api(`/api/stats?limit=2000${range}`)
  table.rows = r.rows
  table.title = state.selection
    ? `${r.kinds} paths, ${r.slices} slices starting in the selection (${formatNs(state.selection[1] - state.selection[0])})`
    : `${r.kinds} paths, ${r.slices} slices in all`
  table.title += liveNote()
  table.kinds = r.kinds
  renderStats()
}

function renderStats() {
  const root = $('results')
  root.innerHTML = ''
  root.dataset.kinds = String(table.kinds)
  const head = document.createElement('p')
  head.textContent = table.title
  const cols = [['path', 'path'], ['type', 'type'], ['count', 'count'], ['total_ns', 'total'], ['p50_ns', 'p50'], ['p99_ns', 'p99'], ['max_ns', 'max']]
  const t = document.createElement('table')
  const tr = document.createElement('tr')
  for (const [key, label] of cols) {
    const th = document.createElement('th')
    th.textContent = label + (table.sort === key ? (table.down ? ' ▾' : ' ▴') : '')
    th.onclick = () => {
      table.down = table.sort === key ? !table.down : true
      table.sort = key
      renderStats()
    }
    tr.appendChild(th)
  }
  t.appendChild(tr)
  const key = r => (table.sort === 'path' ? r.path.join('/') : r[table.sort])
  const rows = [...table.rows].sort((a, b) => {
    const x = key(a), y = key(b)
    const c = x < y ? -1 : x > y ? 1 : 0
    return table.down ? -c : c
  })
  for (const r of rows) {
    const row = document.createElement('tr')
    row.dataset.path = r.path.join('/')
    row.dataset.count = String(r.count)
    row.dataset.totalNs = String(r.total_ns)
    row.title = r.path.join(' / ') + (r.exact ? '' : ' (p50 and p99 within 0.1%)')
    row.onclick = () => showKind(r).catch(err => status(String(err.message || err)))
    const cells = [r.path[r.path.length - 1], r.type, r.count.toLocaleString('en'), formatNs(r.total_ns), formatNs(r.p50_ns), formatNs(r.p99_ns), formatNs(r.max_ns)]
    for (const c of cells) {
      const td = document.createElement('td')
      td.textContent = c
      row.appendChild(td)
    }
    t.appendChild(row)
  }
  root.append(head, t)
}

// One row of the statistics: the histogram of its durations and its slowest occurrences.
async function showKind(row) {
  const range = state.selection ? `&start=${Math.floor(state.selection[0])}&end=${Math.ceil(state.selection[1])}` : ''
  const k = await api(`/api/kind?trace=${row.trace}&type=${row.type}&path=${encodeURIComponent(JSON.stringify(row.path))}${range}`)
  let box = $('kind')
  if (!box) {
    box = document.createElement('div')
    box.id = 'kind'
    $('results').prepend(box)
  }
  box.innerHTML = ''
  box.dataset.count = String(k.count)
  box.dataset.slowestNs = String(k.slowest.length ? k.slowest[0].duration_ns : 0)
  const h = document.createElement('h3')
  h.textContent = `${row.path.join(' / ')}: ${k.count.toLocaleString('en')}, ${formatNs(k.min_ns)} to ${formatNs(k.max_ns)}`
  const c = document.createElement('canvas')
  c.width = 400
  c.height = 90
  const g = c.getContext('2d')
  const most = Math.max(1, ...k.histogram.map(b => b[2]))
  const w = c.width / k.histogram.length
  k.histogram.forEach((b, i) => {
    const hgt = b[2] ? Math.max(1, Math.sqrt(b[2] / most) * (c.height - 14)) : 0
    g.fillStyle = '#2a6fb0'
    g.fillRect(i * w + 1, c.height - 12 - hgt, w - 2, hgt)
  })
  g.fillStyle = '#333'
  g.font = '10px system-ui, sans-serif'
  g.fillText(formatNs(k.min_ns), 0, c.height - 1)
  const right = formatNs(k.max_ns)
  g.fillText(right, c.width - g.measureText(right).width, c.height - 1)
  const title = document.createElement('p')
  title.textContent = 'slowest (click to show):'
  const ol = document.createElement('ol')
  for (const s of k.slowest) {
    const li = document.createElement('li')
    li.textContent = `${formatNs(s.duration_ns)} at ${formatNs(s.start_ns - state.span.start)} · ${threadName(row.trace, s.tid)}`
    li.onclick = async () => {
      const pad = (s.end_ns - s.start_ns) * 2 + 1000
      state.show(s.start_ns - pad, s.end_ns + pad)
      const track = state.tracks.find(t => t.kind === 'thread' && t.trace === row.trace && t.tid === s.tid)
      if (track) await select(track, { slice: [s.start_ns, s.end_ns, -1, s.index, 0] })
    }
    ol.appendChild(li)
  }
  box.append(h, c, title, ol)
}

// The flame graph of the selection (or of everything): each scope path a box as wide as its total
// time, under its parent; what a box's children leave uncovered is its self time.
async function showFlame() {
  const range = state.selection ? `&start=${Math.floor(state.selection[0])}&end=${Math.ceil(state.selection[1])}` : ''
  const r = await api(`/api/stats?limit=5000${range}`)
  const root = { name: 'all', total: 0, children: new Map() }
  for (const row of r.rows) {
    let node = root
    row.path.forEach((name, i) => {
      const key = `${row.trace}\u0000${name}\u0000${i === row.path.length - 1 ? row.type : 'scope'}`
      if (!node.children.has(key)) node.children.set(key, { name, total: 0, children: new Map() })
      node = node.children.get(key)
    })
    node.total = row.total_ns
  }
  for (const c of root.children.values()) root.total += c.total
  const box = $('results')
  box.innerHTML = ''
  const head = document.createElement('p')
  head.textContent = `flame graph of ${state.selection ? 'the selection' : 'everything'}: ${formatNs(root.total)} in scopes` + (r.kinds > r.rows.length ? ` (the ${r.rows.length} largest of ${r.kinds} paths)` : '') + liveNote()
  const c = document.createElement('canvas')
  c.id = 'flame'
  const rowH = 16
  let depth = 0
  const measure = (n, d) => { depth = Math.max(depth, d); for (const k of n.children.values()) measure(k, d + 1) }
  measure(root, 0)
  c.width = 420
  c.height = (depth + 1) * rowH
  const g = c.getContext('2d')
  g.font = '10px system-ui, sans-serif'
  g.textBaseline = 'middle'
  let boxes = 0
  const draw = (n, x, w, d) => {
    g.fillStyle = d === 0 ? '#ccd' : color(n.name)
    g.fillRect(x, d * rowH, Math.max(w - 1, 1), rowH - 1)
    boxes++
    if (w > 30) {
      g.fillStyle = '#111'
      g.save()
      g.beginPath()
      g.rect(x, d * rowH, w, rowH)
      g.clip()
      g.fillText(`${n.name} ${formatNs(n.total)}`, x + 2, d * rowH + rowH / 2)
      g.restore()
    }
    let cx = x
    for (const k of [...n.children.values()].sort((a, b) => b.total - a.total)) {
      const kw = n.total > 0 ? (w * k.total) / n.total : 0
      if (kw >= 0.5) draw(k, cx, kw, d + 1)
      cx += kw
    }
  }
  draw(root, 0, c.width, 0)
  c.dataset.boxes = String(boxes)
  c.dataset.totalNs = String(root.total)
  box.append(head, c)
}

// What the search, statistics and flame graph leave out while traces are live.
function liveNote() {
  const n = state.traces.filter(t => t.state === 'live').length
  return n ? ` (not counting ${n} live trace${n > 1 ? 's' : ''}: a trace is searched and counted once its recording has ended and it is indexed)` : ''
}
