// The flame graph (an icicle: the outermost scopes on top) of the selected range or of
// everything, of all threads merged or of one (the selector): each scope path a frame as wide as
// its total time under its parent; what a frame's children leave uncovered is its self time.
// Frames are labelled where their name fits (cut with an ellipsis); hovering one gives its name,
// total and self time and count; clicking one zooms into it (it spans the width, its ancestors
// above it), clicking an ancestor zooms back out; frames matching the search are highlighted.
// Drawn at the screen's pixel ratio.

import { $, api, color, formatNs, state, status } from './view.js'
import { context, sizeCanvas } from './draw.js'
import { fitText, formatExact } from './format.js'
import { liveNote, matchesSearch, rangeQuery, run } from './panels.js'

const ROW = 18
const FONT = '11px system-ui, sans-serif'
const widths = new Map()

// What is shown: the tree, the frame zoomed into, the thread ('' for all merged), and the frames
// as laid out (for the mouse).
const flame = { root: null, focus: null, thread: '', boxes: [] }

export function showFlame() {
  const [trace, tid] = flame.thread ? flame.thread.split('/') : []
  const one = flame.thread ? `&trace=${trace}&tid=${tid}` : ''
  return run('flame', showFlame, () => api(`/api/stats?limit=5000${rangeQuery()}${one}`), (r, root) => {
    flame.root = tree(r.rows)
    flame.focus = flame.root
    const head = document.createElement('p')
    head.id = 'flame-head'
    const what = state.selection ? 'the range' : 'everything'
    head.textContent = `flame graph of ${what}: ${formatNs(flame.root.total)} in scopes` +
      (r.kinds > r.rows.length ? ` (the ${r.rows.length} largest of ${r.kinds} paths)` : '') + liveNote(r)
    const pick = document.createElement('select')
    pick.id = 'flame-thread'
    pick.add(new Option('all threads, merged', ''))
    for (const t of state.tracks.filter(k => k.kind === 'thread')) {
      pick.add(new Option(`${t.name}${t.name.includes('tid') ? '' : ` (tid ${t.tid})`}`, `${t.trace}/${t.tid}`))
    }
    pick.value = flame.thread
    pick.onchange = () => {
      flame.thread = pick.value
      showFlame().catch(err => status(String(err.message || err)))
    }
    const hint = document.createElement('p')
    hint.className = 'hint'
    hint.textContent = 'click a frame to zoom into it, one above to zoom back out'
    const c = document.createElement('canvas')
    c.id = 'flame'
    root.append(head, pick, hint, c)
    listenFlame(c)
    drawFlame()
  })
}

// The rows (one per scope path, `total_ns` and `count`) as a tree of frames by name, keyed by
// trace and type too (a lock's wait is not its held).
function tree(rows) {
  const root = { name: 'all', total: 0, count: 0, children: new Map(), parent: null, depth: 0 }
  for (const row of rows) {
    let node = root
    row.path.forEach((name, i) => {
      const last = i === row.path.length - 1
      const key = `${row.trace}\u0000${name}\u0000${last ? row.type : 'scope'}`
      if (!node.children.has(key)) {
        node.children.set(key, { name: last && row.name ? row.name : name, total: 0, count: 0, children: new Map(), parent: node, depth: node.depth + 1 })
      }
      node = node.children.get(key)
    })
    node.total += row.total_ns
    node.count += row.count
  }
  // A path cut by the row limit has no row of its own: its children's totals then.
  const fill = n => {
    let inner = 0
    for (const k of n.children.values()) inner += fill(k)
    if (n.total < inner) n.total = inner
    n.self = n.total - inner
    return n.total
  }
  fill(root)
  root.self = 0
  return root
}

function drawFlame() {
  const c = $('flame')
  if (!c) return
  const width = Math.max(200, $('results').clientWidth - 20)
  const focus = flame.focus
  let depth = 0
  const deepest = (n, d) => {
    depth = Math.max(depth, d)
    for (const k of n.children.values()) deepest(k, d + 1)
  }
  deepest(focus, focus.depth)
  sizeCanvas(c, width, (depth + 1) * ROW)
  c.style.width = `${width}px`
  const g = context(c)
  g.font = FONT
  g.textBaseline = 'middle'
  flame.boxes = []
  let matches = 0
  const searching = !!(state.search && state.search.q)
  const box = (n, x, w) => {
    const y = n.depth * ROW
    const hit = searching && n.parent && matchesSearch(n.name)
    if (hit) matches++
    g.globalAlpha = searching && !hit ? 0.35 : 1
    g.fillStyle = n.parent ? color(n.name) : '#ccd'
    g.fillRect(x, y, Math.max(w - 1, 1), ROW - 1)
    if (hit) {
      g.strokeStyle = '#e0007a'
      g.lineWidth = 2
      g.strokeRect(x + 1, y + 1, Math.max(w - 3, 1), ROW - 3)
    }
    g.globalAlpha = 1
    flame.boxes.push({ x, w, y, node: n })
    if (w > 14) {
      const text = fitText(g, n.parent ? n.name : `all (${formatNs(n.total)})`, w - 6, widths)
      if (text) {
        g.fillStyle = '#111'
        g.fillText(text, x + 3, y + ROW / 2)
      }
    }
  }
  // The focus's ancestors, the width each.
  for (let a = focus.parent; a; a = a.parent) box(a, 0, width)
  const draw = (n, x, w) => {
    box(n, x, w)
    let cx = x
    for (const k of [...n.children.values()].sort((a, b) => b.total - a.total)) {
      const kw = n.total > 0 ? (w * k.total) / n.total : 0
      if (kw >= 0.5) draw(k, cx, kw)
      cx += kw
    }
  }
  draw(focus, 0, width)
  c.dataset.boxes = String(flame.boxes.length)
  c.dataset.totalNs = String(flame.root.total)
  c.dataset.focus = focus.parent ? focus.name : ''
  c.dataset.matches = String(matches)
}

// The frame at CSS (x, y) of the canvas.
function frameAt(x, y) {
  return flame.boxes.find(b => x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW)
}

function listenFlame(c) {
  const tip = $('flame-tip') || Object.assign(document.createElement('div'), { id: 'flame-tip', hidden: true })
  if (!tip.isConnected) document.body.appendChild(tip)
  const at = e => {
    const r = c.getBoundingClientRect()
    return frameAt(e.clientX - r.left, e.clientY - r.top)
  }
  c.addEventListener('mousemove', e => {
    const b = at(e)
    if (!b) {
      tip.hidden = true
      return
    }
    const n = b.node
    const share = flame.root.total ? ` (${(100 * n.total / flame.root.total).toFixed(1)}%)` : ''
    tip.textContent = [n.parent ? n.name : 'all', `total ${formatExact(n.total)}${share}`, `self ${formatExact(n.self)}`,
      ...(n.parent ? [`count ${n.count.toLocaleString('en')}`] : [])].join('\n')
    tip.style.left = `${Math.min(e.pageX + 14, window.innerWidth - 320)}px`
    tip.style.top = `${e.pageY + 14}px`
    tip.hidden = false
  })
  c.addEventListener('mouseleave', () => { tip.hidden = true })
  c.addEventListener('click', e => {
    const b = at(e)
    if (!b) return
    // The frame zoomed into already: back out to its parent.
    flame.focus = b.node === flame.focus && b.node.parent ? b.node.parent : b.node
    tip.hidden = true
    drawFlame()
  })
}

// A new search: the frames matching it highlighted.
export function searchChanged() {
  drawFlame()
}

// The panel's width changed: the graph fills it again.
export function redrawFlame() {
  if (flame.root) drawFlame()
}
