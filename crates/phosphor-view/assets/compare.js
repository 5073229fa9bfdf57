// The comparison panel of `phosphor view BASE NEW --compare`: `phosphor diff BASE NEW`'s rows
// (`/api/compare`, the same code and the same figures), each path with its count, total, p50,
// p90, p99 and max on either side, their change and the rank test. A significant change is
// marked (▲ slower in red, ▼ faster in green); a path only in NEW or only in BASE reads `new` or
// `gone`. Clicking a column's head sorts by the change of that figure (again: the other way);
// clicking `#` gives the diff's order back (the largest change of total time first). Clicking a
// row lists the slowest occurrences of its path in BASE and in NEW (`/api/kind` of each trace);
// clicking one shows that slice on the timeline, selected.

import { $, api, formatNs, select, state, status } from './view.js'
import { panel, run, showSlice, threadName } from './panels.js'

// The answer once ready, the sort (null: the diff's order), and the row whose occurrences show.
const cmp = { answer: null, sort: null, down: true, open: null }

const problem = err => status(String(err.message || err))
const FIGURES = [['count', 'count'], ['total_ns', 'total'], ['p50_ns', 'p50'], ['p90_ns', 'p90'], ['p99_ns', 'p99'], ['max_ns', 'max']]

// Asks whether the server compares two traces; if it does, shows the Compare button, widens the
// panels for the table, and opens it unless another panel was opened meanwhile.
export function listenCompare() {
  // For the tests (the module's top level cannot reach view.js's state: the imports are circular).
  state.compare = cmp
  $('compare-button').onclick = () => showCompare().catch(problem)
  api('/api/compare').then(c => {
    if (c.state === 'off') return
    $('compare-button').hidden = false
    document.body.dataset.compare = c.state
    const side = $('side')
    if (!side.style.width) side.style.width = `${Math.round(Math.max(440, Math.min(900, 0.5 * window.innerWidth)))}px`
    if (!panel.kind) return showCompare()
  }).catch(problem)
}

// The comparison, asked for again every 200 ms while the server computes it (a pass over both
// files, as `phosphor diff` makes).
async function answer() {
  while (!cmp.answer) {
    const c = await api('/api/compare')
    if (c.state === 'ready') cmp.answer = c
    else if (c.state === 'off') throw new Error('the server compares no traces (phosphor view BASE NEW --compare)')
    else await new Promise(r => setTimeout(r, 200))
  }
  document.body.dataset.compare = 'ready'
  return cmp.answer
}

export function showCompare() {
  cmp.open = null
  return run('compare', null, answer, (c, root) => render(root))
}

// A trace's name in the panel: BASE or NEW, its number and its file.
function sideName(which) {
  const s = cmp.answer[which]
  return `${which === 'base' ? 'BASE' : 'NEW'} (trace ${s.trace}: ${s.file})`
}

// A change as `phosphor diff` writes it: a signed percentage, `=` when nothing changed, `new`
// from a base of 0.
function relative(c) {
  if (!c) return ''
  if (c.base === c.new) return '='
  if (c.relative === null) return 'new'
  return `${c.relative >= 0 ? '+' : ''}${(100 * c.relative).toFixed(1)}%`
}

// A p-value as `phosphor diff` writes it.
function pValue(p) {
  if (p < 1e-9) return '<1e-9'
  if (p < 0.001) return p.toExponential(1)
  return p.toFixed(3)
}

// What a row is sorted by for column `key`: the relative change of that figure (a path only in
// NEW first, one only in BASE last going down), its p-value, or its path.
function sortKey(row, key) {
  if (key === 'path') return row.path
  if (key === 'p_value') return row.test ? -row.test.p_value : -Infinity
  const c = row.change[key]
  if (!c) return -Infinity
  if (c.relative === null) return c.new > 0 ? Infinity : 0
  return c.relative
}

function sorted() {
  const rows = cmp.answer.rows.map((r, i) => ({ r, i }))
  if (!cmp.sort) return rows
  const k = cmp.sort
  return rows.sort((a, b) => {
    const x = sortKey(a.r, k), y = sortKey(b.r, k)
    const c = x < y ? -1 : x > y ? 1 : a.i - b.i
    return cmp.down ? -c : c
  })
}

// The mark of a row: ▲ slower, ▼ faster (significant), `new`, `gone`.
function mark(r) {
  if (r.status !== 'both') return r.status
  if (!r.test || !r.test.significant) return ''
  return r.test.direction === 'slower' ? '▲' : r.test.direction === 'faster' ? '▼' : '•'
}

function render(root) {
  const c = cmp.answer
  root.querySelectorAll('#compare-head, #compare').forEach(n => n.remove())
  const head = document.createElement('p')
  head.id = 'compare-head'
  const significant = c.rows.filter(r => r.test && r.test.significant).length
  head.textContent = `${sideName('base')} → ${sideName('new')}: ${c.rows_total} paths, ${significant} changed significantly ` +
    `(rank test, p < ${c.significance}; ▲ slower, ▼ faster). Click a row for its slowest occurrences on either side.`
  const t = document.createElement('table')
  t.id = 'compare'
  const tr = document.createElement('tr')
  const heads = [['#', null], ['path', 'path'], ['type', null], ['', null], ...FIGURES.map(([key, label]) => [label, key]), ['p-value', 'p_value']]
  for (const [label, key] of heads) {
    const th = document.createElement('th')
    th.textContent = label + (key && cmp.sort === key ? (cmp.down ? ' ▾' : ' ▴') : '')
    if (label === 'path' || label === 'type') th.className = 'left'
    if (key) th.title = key === 'path' ? 'sort by path' : key === 'p_value' ? 'sort by significance' : `sort by the change of ${label}`
    else if (label === '#') th.title = 'the diff\u2019s order: the largest change of total time first'
    if (key || label === '#') {
      th.dataset.sort = key || ''
      th.onclick = () => {
        cmp.down = cmp.sort === key ? !cmp.down : key !== 'path'
        cmp.sort = key
        render(root)
      }
    }
    tr.appendChild(th)
  }
  const thead = document.createElement('thead')
  thead.appendChild(tr)
  t.appendChild(thead)
  for (const { r, i } of sorted()) t.appendChild(rowBody(r, i))
  root.append(head, t)
}

// A row as three lines, as `phosphor diff` prints it: BASE's figures, NEW's, and their change
// with the rank test.
function rowBody(r, i) {
  const body = document.createElement('tbody')
  body.className = 'cmp-row'
  const sig = r.test && r.test.significant
  if (sig) body.classList.add(r.test.direction)
  if (r.status !== 'both') body.classList.add(r.status)
  if (cmp.open === i) body.classList.add('at')
  Object.assign(body.dataset, { row: String(i), path: r.path, type: r.type, status: r.status, significant: sig ? '1' : '', direction: r.test ? r.test.direction : '' })
  body.title = `${r.path} (${r.type})` + (r.test ? `: ${r.test.method}, p = ${r.test.p_value}` : '')
  body.onclick = () => showOccurrences(i).catch(problem)
  const lines = [['base', r.base], ['new', r.new], ['change', null]]
  lines.forEach(([side, f], k) => {
    const line = document.createElement('tr')
    const cell = (text, cls) => {
      const td = document.createElement('td')
      td.textContent = text
      if (cls) td.className = cls
      line.appendChild(td)
      return td
    }
    if (k === 0) {
      for (const [text, cls] of [[mark(r), 'mark'], [r.path, 'name'], [r.type, 'type']]) cell(text, cls).rowSpan = 3
    }
    cell(side, 'side')
    for (const [key] of FIGURES) {
      if (side === 'change') cell(relative(r.change[key]), 'change')
      else if (!f) cell('—')
      else if (key === 'count') cell(f.count.toLocaleString('en'))
      else cell(f[key] === undefined ? '' : formatNs(f[key]))
    }
    if (side === 'change') cell(r.test ? `${pValue(r.test.p_value)}${r.test.direction !== 'none' ? ` ${r.test.direction}` : ''}` : '', 'p')
    else cell('')
    line.className = side
    body.appendChild(line)
  })
  return body
}

// The slowest occurrences of row `i`'s path in each trace, over the table (which stays).
function showOccurrences(i) {
  const c = cmp.answer
  const r = c.rows[i]
  const kind = c.kinds[i]
  const ask = which => {
    if (!kind || !r[which]) return null
    const q = `trace=${c[which].trace}&type=${kind.type}&path=${encodeURIComponent(JSON.stringify(kind.path))}`
    return api(`/api/kind?${q}`)
  }
  const keep = [...$('results').childNodes].filter(n => n.id !== 'compare-occ')
  cmp.open = i
  return run('compare', null, () => Promise.all([ask('base'), ask('new')]), (sides, root) => {
    root.append(...keep)
    for (const b of root.querySelectorAll('tbody.cmp-row')) b.classList.toggle('at', b.dataset.row === String(i))
    const box = document.createElement('div')
    box.id = 'compare-occ'
    box.dataset.row = String(i)
    root.prepend(box)
    const h = document.createElement('h3')
    h.textContent = `${r.path} (${r.type})`
    box.appendChild(h)
    if (!kind) {
      const p = document.createElement('p')
      p.className = 'hint'
      p.textContent = 'no occurrences to list: this row counts events without durations'
      box.appendChild(p)
      return
    }
    const cols = document.createElement('div')
    cols.className = 'occ-sides'
    box.appendChild(cols)
    ;['base', 'new'].forEach((which, k) => cols.appendChild(occurrences(which, r, sides[k])))
  })
}

// One side's slowest occurrences (`/api/kind`'s answer `k`), each showing its slice when clicked.
function occurrences(which, r, k) {
  const trace = cmp.answer[which].trace
  const div = document.createElement('div')
  div.className = `occ ${which}`
  div.dataset.trace = String(trace)
  const p = document.createElement('p')
  div.appendChild(p)
  if (!k) {
    p.textContent = `${sideName(which)}: not there`
    return div
  }
  p.textContent = `${sideName(which)}: ${k.count.toLocaleString('en')}, p50 ${formatNs(k.p50_ns)}, p99 ${formatNs(k.p99_ns)}; the slowest ${k.slowest.length}:`
  const t = state.traces.find(x => x.trace === trace)
  const origin = t && t.start_ns !== undefined ? t.start_ns : state.span.start
  const ol = document.createElement('ol')
  for (const s of k.slowest) {
    const li = document.createElement('li')
    const on = s.async === undefined ? threadName(trace, s.tid) : asyncName(trace, s.async)
    li.textContent = `${formatNs(s.duration_ns)} at ${formatNs(s.start_ns - origin)} · ${on}`
    Object.assign(li.dataset, { trace: String(trace), index: String(s.index), durationNs: String(s.duration_ns) })
    li.onclick = () => {
      for (const x of $('results').querySelectorAll('#compare-occ li')) x.classList.toggle('at', x === li)
      ;(s.async === undefined ? showSlice(trace, s) : showAsync(trace, s)).catch(problem)
    }
    ol.appendChild(li)
  }
  div.appendChild(ol)
  return div
}

// The async track `a` of trace `trace`, by name.
function asyncName(trace, a) {
  const t = state.tracks.find(k => k.kind === 'async' && k.trace === trace && k.async === a)
  return t ? t.name : `async track ${a}`
}

// Shows async slice `s` ({index, async, start_ns, end_ns}) of trace `trace`, selected (as
// panels.js's showSlice shows a thread's).
async function showAsync(trace, s) {
  const pad = (s.end_ns - s.start_ns) * 2 + 1000
  state.show(s.start_ns - pad, s.end_ns + pad)
  const track = state.tracks.find(t => t.kind === 'async' && t.trace === trace && t.async === s.async)
  if (!track) return
  if (track.label) track.label.scrollIntoView({ block: 'nearest' })
  await select(track, { slice: [s.start_ns, s.end_ns, -1, s.index, 0] })
}
