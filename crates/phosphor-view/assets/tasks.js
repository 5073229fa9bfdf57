// The tasks panel (`phosphor::tokio`; `/api/tasks`: src/task_table.rs): the tokio tasks of each
// indexed trace by task name, the figures `phosphor stats` gives: tasks spawned, polls, time in
// polls (busy), woken but waiting for a worker (scheduled), parked (idle), long polls. A row
// clicked searches for its name, which marks the task's polls and async slices.
//
// Under it, the longest long polls (those `phosphor stats` lists, by the same code): task, worker,
// start, duration and, with a system context, their on- and off-CPU time, CPU samples and the
// samples' leaf functions. A long poll clicked is selected and shown on the timeline (where long
// polls are drawn in red), and the stacks of its samples listed under the table (stacks.js).

import { $, api, formatNs, state } from './view.js'
import { run, threadName } from './panels.js'
import { stacksOf, stacksTable } from './stacks.js'

export function showTasks() {
  const traces = state.traces.filter(t => t.state === 'ready')
  return run('tasks', null, () => Promise.all(traces.map(t => api(`/api/tasks?trace=${t.trace}`).then(r => ({ trace: t.trace, r })))),
    (answers, root) => render(answers, root))
}

function render(answers, root) {
  const several = answers.length > 1
  const rows = answers.flatMap(({ trace, r }) => r.tasks.map(x => ({ trace, ...x })))
  rows.sort((a, b) => b.busy_ns - a.busy_ns || (a.name < b.name ? -1 : 1))
  const head = document.createElement('p')
  const spawned = rows.reduce((n, r) => n + r.spawned, 0)
  head.textContent = rows.length
    ? `${spawned.toLocaleString('en')} tasks spawned, ${rows.length} names (busy: in polls; scheduled: woken, waiting for a worker; idle: parked)`
    : 'no tokio tasks in the trace (phosphor::tokio records them)'
  for (const { r } of answers) if (r.read_error) head.textContent += ` · ${r.read_error}`
  root.appendChild(head)
  if (!rows.length) return
  const cols = [...(several ? ['trace'] : []), 'task', 'spawned', 'polls', 'busy', 'p99 poll', 'scheduled', 'max wait', 'idle', 'long polls']
  const t = document.createElement('table')
  t.id = 'tasks'
  const tr = document.createElement('tr')
  for (const c of cols) {
    const th = document.createElement('th')
    if (c === 'task' || c === 'trace') th.className = 'left'
    th.textContent = c
    tr.appendChild(th)
  }
  t.appendChild(tr)
  for (const r of rows) {
    const row = document.createElement('tr')
    Object.assign(row.dataset, { name: r.name, spawned: r.spawned, polls: r.polls, busyNs: r.busy_ns, scheduledNs: r.scheduled_ns, idleNs: r.idle_ns, longPolls: r.long_polls })
    row.title = `${r.name}: ${r.ended} of ${r.spawned} ended; poll p50 ${formatNs(r.p50_poll_ns)}, max ${formatNs(r.max_poll_ns)}; click to search for its polls`
    row.onclick = () => {
      $('search').value = r.name
      $('search-form').requestSubmit()
    }
    const cells = [...(several ? [String(r.trace)] : []), r.name, r.spawned.toLocaleString('en'), r.polls.toLocaleString('en'),
      formatNs(r.busy_ns), formatNs(r.p99_poll_ns), formatNs(r.scheduled_ns), formatNs(r.max_scheduled_ns), formatNs(r.idle_ns),
      r.long_polls.toLocaleString('en')]
    cells.forEach((c, i) => {
      const td = document.createElement('td')
      td.textContent = c
      if (i === (several ? 1 : 0)) td.className = 'name'
      row.appendChild(td)
    })
    t.appendChild(row)
  }
  root.appendChild(t)
  longPolls(answers, rows, root)
}

// The longest long polls of every trace, longest first, and what the system saw in each.
function longPolls(answers, rows, root) {
  const several = answers.length > 1
  const polls = answers.flatMap(({ trace, r }) => r.long_polls.map(p => ({ trace, ...p })))
  if (!polls.length) return
  polls.sort((a, b) => b.dur_ns - a.dur_ns || a.start_ns - b.start_ns)
  const total = rows.reduce((n, r) => n + r.long_polls, 0)
  const system = polls.some(p => p.system)
  const head = document.createElement('p')
  head.id = 'long-polls-head'
  head.textContent = `longest long polls (${polls.length} of ${total.toLocaleString('en')}; ` +
    (system ? 'CPU samples inside each; click one to show it and its samples’ stacks)' : 'no system context: record with --system for their CPU samples; click one to show it)')
  // Every long poll, not only the longest: a search for their slices lists them in time order.
  const all = document.createElement('button')
  all.type = 'button'
  all.id = 'long-polls-search'
  all.textContent = `search all ${total.toLocaleString('en')}`
  all.title = 'list every long poll (a search for the `long poll` slices)'
  all.onclick = () => {
    $('search').value = 'long poll'
    $('search-form').requestSubmit()
  }
  head.append(' ', all)
  const cols = [...(several ? ['trace'] : []), 'task', 'at', 'poll', ...(system ? ['on / off CPU', 'samples', 'leaf functions'] : ['thread'])]
  const left = new Set(['trace', 'task', 'thread', 'leaf functions'])
  const t = document.createElement('table')
  t.id = 'long-polls'
  const tr = document.createElement('tr')
  for (const c of cols) {
    const th = document.createElement('th')
    if (left.has(c)) th.className = 'left'
    th.textContent = c
    tr.appendChild(th)
  }
  t.appendChild(tr)
  const stacks = document.createElement('div')
  stacks.id = 'long-poll-stacks'
  for (const p of polls) {
    const row = document.createElement('tr')
    Object.assign(row.dataset, { task: p.task, taskId: p.task_id, tid: p.tid, startNs: p.start_ns, durNs: p.dur_ns })
    const s = p.system
    const fns = s ? s.functions.map(([f, n]) => `${f} (${n.toLocaleString('en')})`).join(', ') : ''
    const cells = [...(several ? [String(p.trace)] : []), `${p.task} #${p.task_id}`, formatNs(p.start_ns - state.span.start), formatNs(p.dur_ns),
      ...(system ? (s ? [`${formatNs(s.on_cpu_ns)} / ${formatNs(s.off_cpu_ns)}`, s.samples.toLocaleString('en'), fns] : ['', '', '']) : [threadName(p.trace, p.tid)])]
    cells.forEach((c, i) => {
      const td = document.createElement('td')
      td.textContent = c
      if (left.has(cols[i])) td.className = 'left'
      if (cols[i] === 'leaf functions') {
        td.className = 'fns'
        td.title = fns
      }
      row.appendChild(td)
    })
    row.title = `${p.task} (task ${p.task_id}) polled for ${formatNs(p.dur_ns)} on ${threadName(p.trace, p.tid)}` +
      (s ? `: ${formatNs(s.on_cpu_ns)} on the CPU, ${formatNs(s.off_cpu_ns)} off it (preempted ${formatNs(s.preempted_ns)}), ${s.switches} switches` : '')
    row.onclick = () => {
      for (const r of t.querySelectorAll('tr.at')) r.classList.remove('at')
      row.classList.add('at')
      showPoll(p, stacks).catch(err => { stacks.textContent = String(err.message || err) })
    }
    t.appendChild(row)
  }
  root.append(head, t, stacks)
}

// Long poll `p` selected and shown on the timeline; with a system context, its samples' stacks
// listed in `box`.
async function showPoll(p, box) {
  const [a, b] = [p.start_ns, p.start_ns + p.dur_ns]
  state.selection = [a, b]
  const pad = Math.max(1, (b - a) / 4)
  state.show(a - pad, b + pad)
  if (state.onSelection) state.onSelection()
  box.textContent = ''
  if (!p.system) return
  const r = await stacksOf(p.trace, p.tid, a, b)
  box.textContent = ''
  box.dataset.start = String(a)
  box.appendChild(stacksTable(r, `in the long poll of ${p.task} #${p.task_id} (${formatNs(p.dur_ns)})`))
}
