// A thread's CPU samples in an interval by call stack (`/api/stacks`: src/system.rs): a long
// poll's (the tasks panel) or a selected slice's (its details). Each distinct stack is a row: its
// samples, its share of them as a bar, and its functions innermost first (leaf ← caller ← …), cut
// after MAX_SHOWN frames (the row's tooltip has them all, one a line).

import { api } from './view.js'

const MAX_SHOWN = 8

// The samples of thread `tid` of trace `trace` from `start` to `end` (shared timeline), by stack.
export function stacksOf(trace, tid, start, end) {
  return api(`/api/stacks?trace=${trace}&tid=${tid}&start=${Math.floor(start)}&end=${Math.ceil(end)}`)
}

// A stack's text: its functions innermost first.
export const stackText = frames =>
  frames.slice(0, MAX_SHOWN).join(' ← ') + (frames.length > MAX_SHOWN ? ` ← … (${frames.length - MAX_SHOWN} more)` : '')

// The answer `r` as a heading `title` and a table (class `stacks`) of its stacks.
export function stacksTable(r, title) {
  const box = document.createElement('div')
  box.className = 'stacks'
  const h = document.createElement('h3')
  const n = r.samples.toLocaleString('en')
  h.textContent = `${n} CPU sample${r.samples === 1 ? '' : 's'} ${title}` +
    (r.more ? ` (${r.more.toLocaleString('en')} in stacks past the ${r.stacks.length} shown)` : '')
  box.appendChild(h)
  if (!r.stacks.length) return box
  const t = document.createElement('table')
  for (const s of r.stacks) {
    const tr = document.createElement('tr')
    tr.dataset.count = String(s.count)
    tr.title = s.frames.join('\n')
    const share = r.samples ? s.count / r.samples : 0
    const count = document.createElement('td')
    count.textContent = s.count.toLocaleString('en')
    const bar = document.createElement('td')
    bar.className = 'share'
    bar.title = `${(100 * share).toFixed(1)}% of the samples`
    const fill = document.createElement('span')
    fill.style.width = `${Math.max(1, Math.round(40 * share))}px`
    bar.appendChild(fill)
    const text = document.createElement('td')
    text.className = 'frames'
    text.textContent = stackText(s.frames)
    tr.append(count, bar, text)
    t.appendChild(tr)
  }
  box.appendChild(t)
  if (r.warnings.length) {
    const w = document.createElement('p')
    w.className = 'hint'
    w.textContent = `symbols: ${r.warnings.join('; ')}`
    box.appendChild(w)
  }
  return box
}
