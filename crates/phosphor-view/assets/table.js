// The statistics panel: per scope path across threads, of the selected range or of everything,
// a sortable table (a trace column when several traces are open; a lock's rows named as every
// output names them, `queue (wait)` and `queue (held)`), and a row's histogram (log-scale time
// axis with ticks, counts with ticks, p50, p90 and p99 marked) with its slowest occurrences.

import { $, api, formatNs, state, status } from './view.js'
import { context, sizeCanvas } from './draw.js'
import { ink } from './format.js'
import { liveNote, rangeQuery, run, showSlice, threadName } from './panels.js'

const table = { rows: [], sort: 'total_ns', down: true }

export function showStats() {
  return run('stats', showStats, () => api(`/api/stats?limit=2000${rangeQuery()}`), (r, root) => {
    table.rows = r.rows
    const s = state.selection
    table.title = (s
      ? `${r.kinds} paths, ${r.slices} slices starting in the range (${formatNs(s[1] - s[0])})`
      : `${r.kinds} paths, ${r.slices} slices in all`) + liveNote(r)
    table.kinds = r.kinds
    root.dataset.kinds = String(r.kinds)
    root.dataset.range = s ? s.join() : ''
    renderStats(root)
  })
}

// A row's own name: the server's (a lock's `queue (wait)`), else its path's last.
const rowName = r => r.name || r.path[r.path.length - 1]

function renderStats(root) {
  root.innerHTML = ''
  const head = document.createElement('p')
  head.textContent = table.title
  const several = new Set(state.traces.map(t => t.trace)).size > 1
  const cols = [...(several ? [['trace', 'trace']] : []), ['path', 'name'], ['count', 'count'], ['total_ns', 'total'],
    ['p50_ns', 'p50'], ['p99_ns', 'p99'], ['max_ns', 'max']]
  const t = document.createElement('table')
  t.id = 'stats'
  const tr = document.createElement('tr')
  for (const [key, label] of cols) {
    const th = document.createElement('th')
    if (key === 'path' || key === 'trace') th.className = 'left'
    th.textContent = label + (table.sort === key ? (table.down ? ' ▾' : ' ▴') : '')
    th.onclick = () => {
      table.down = table.sort === key ? !table.down : true
      table.sort = key
      renderStats(root)
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
  const traceName = n => {
    const tr = state.traces.find(x => x.trace === n)
    return tr ? `${n}: ${tr.process}` : String(n)
  }
  // A name on several paths: each row also names the scope it is in.
  const seen = new Map()
  for (const r of rows) seen.set(rowName(r), (seen.get(rowName(r)) || 0) + 1)
  for (const r of rows) {
    const row = document.createElement('tr')
    row.dataset.path = r.path.join('/')
    row.dataset.count = String(r.count)
    row.dataset.totalNs = String(r.total_ns)
    row.title = [...r.path.slice(0, -1), rowName(r)].join(' / ') + (several ? ` (trace ${traceName(r.trace)})` : '') +
      (r.exact ? '' : ' (p50 and p99 within 0.1%)')
    row.onclick = () => showKind(r).catch(err => status(String(err.message || err)))
    const cells = [...(several ? [traceName(r.trace)] : []), rowName(r), r.count.toLocaleString('en'), formatNs(r.total_ns),
      formatNs(r.p50_ns), formatNs(r.p99_ns), formatNs(r.max_ns)]
    cells.forEach((c, i) => {
      const td = document.createElement('td')
      td.textContent = c
      if (i === (several ? 1 : 0)) {
        td.className = 'name'
        if (seen.get(c) > 1 && r.path.length > 1) {
          const inner = document.createElement('span')
          inner.className = 'in'
          inner.textContent = ` in ${r.path[r.path.length - 2]}`
          td.append(inner)
        }
      }
      if (several && i === 0) td.className = 'trace'
      row.appendChild(td)
    })
    t.appendChild(row)
  }
  root.append(head, t)
}

// One row of the statistics: the histogram of its durations and its slowest occurrences.
function showKind(row) {
  const q = `/api/kind?trace=${row.trace}&type=${row.type}&path=${encodeURIComponent(JSON.stringify(row.path))}${rangeQuery()}`
  // The table stays (as it was) under the row's histogram.
  const table = [...$('results').childNodes].filter(n => n.id !== 'kind')
  return run('stats', showStats, () => api(q), (k, root) => {
    root.append(...table)
    const box = document.createElement('div')
    box.id = 'kind'
    root.prepend(box)
    box.dataset.count = String(k.count)
    box.dataset.slowestNs = String(k.slowest.length ? k.slowest[0].duration_ns : 0)
    const h = document.createElement('h3')
    h.textContent = `${[...row.path.slice(0, -1), rowName(row)].join(' / ')}: ${k.count.toLocaleString('en')}, ${formatNs(k.min_ns)} to ${formatNs(k.max_ns)}` + liveNote(k)
    const c = document.createElement('canvas')
    c.id = 'histogram'
    box.append(h, c)
    drawHistogram(c, k, Math.max(300, root.clientWidth - 20))
    const title = document.createElement('p')
    title.textContent = 'slowest (click to show):'
    const ol = document.createElement('ol')
    for (const s of k.slowest) {
      const li = document.createElement('li')
      li.textContent = `${formatNs(s.duration_ns)} at ${formatNs(s.start_ns - state.span.start)} · ${threadName(row.trace, s.tid)}`
      li.onclick = () => showSlice(row.trace, s)
      ol.appendChild(li)
    }
    box.append(title, ol)
  })
}

const AXIS = '10px system-ui, sans-serif'

// The histogram: a bar per bucket on a log time axis (ticks at round-ish durations), a linear
// count axis with ticks, and p50, p90 and p99 as lines with their values.
function drawHistogram(c, k, width) {
  const height = 170
  sizeCanvas(c, width, height)
  c.style.width = `${width}px`
  const g = context(c)
  const left = 44, right = 10, top = 34, bottom = 20
  const w = width - left - right, h = height - top - bottom
  const buckets = k.histogram
  if (!buckets.length) return
  const lo = Math.max(1, buckets[0][0]), hi = Math.max(lo + 1, buckets[buckets.length - 1][1])
  const xOf = ns => left + (Math.log(Math.max(ns, 1)) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) * w
  const most = Math.max(1, ...buckets.map(b => b[2]))
  const yOf = n => top + h - n / most * h
  g.fillStyle = '#2a6fb0'
  for (const [a, b, n] of buckets) {
    if (!n) continue
    const x0 = xOf(Math.max(a, lo)), x1 = xOf(b)
    g.fillRect(x0 + 0.5, yOf(n), Math.max(1, x1 - x0 - 1), top + h - yOf(n))
  }
  // Axes.
  g.fillStyle = ink.text
  g.fillRect(left, top + h, w, 1)
  g.fillRect(left, top, 1, h)
  g.font = AXIS
  g.textBaseline = 'top'
  // Time ticks: 1, 2 and 5 times powers of ten within the range, at least 50 px apart.
  let lastX = -Infinity
  for (let p = Math.floor(Math.log10(lo)); p <= Math.ceil(Math.log10(hi)); p++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** p
      if (v < lo || v > hi) continue
      const x = xOf(v)
      if (x - lastX < 50) continue
      lastX = x
      g.fillRect(x, top + h, 1, 4)
      const label = formatNs(v)
      const lw = g.measureText(label).width
      g.fillText(label, Math.min(Math.max(left, x - lw / 2), width - lw), top + h + 6)
    }
  }
  // Count ticks: 0, half and the most.
  g.textBaseline = 'middle'
  for (const n of [0, Math.round(most / 2), most]) {
    const y = yOf(n)
    g.fillRect(left - 4, y, 4, 1)
    const label = n.toLocaleString('en')
    g.fillText(label, left - 6 - g.measureText(label).width, y)
  }
  // Percentiles: a line each, labelled above the plot, on the first of two rows where the label
  // does not overlap one already there.
  g.textBaseline = 'top'
  const taken = [[], []]
  for (const [name, v, colour] of [['p50', k.p50_ns, '#1a8a3a'], ['p90', k.p90_ns, '#c77800'], ['p99', k.p99_ns, '#c0203a']]) {
    if (v === undefined) continue
    const x = xOf(Math.min(Math.max(v, lo), hi))
    g.fillStyle = colour
    g.fillRect(x, top - 2, 1.5, h + 2)
    const label = `${name} ${formatNs(v)}`
    const lw = g.measureText(label).width
    const at = Math.min(Math.max(0, x - lw / 2), width - lw)
    const row = taken.findIndex(r => r.every(([a, b]) => at + lw + 4 <= a || at >= b + 4))
    const line = row < 0 ? 1 : row
    taken[line].push([at, at + lw])
    g.fillText(label, at, 2 + 12 * line)
  }
}
