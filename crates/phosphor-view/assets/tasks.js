// The tasks panel (`phosphor::tokio`; `/api/tasks`: src/task_table.rs): the tokio tasks of each
// indexed trace by task name, the figures `phosphor stats` gives: tasks spawned, polls, time in
// polls (busy), woken but waiting for a worker (scheduled), parked (idle), long polls. A row
// clicked searches for its name, which marks the task's polls and async slices.

import { $, api, formatNs, state } from './view.js'
import { run } from './panels.js'

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
}
