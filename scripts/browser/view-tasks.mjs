// The tasks panel of a running `phosphor view` in headless Chromium: clicks "Tasks", reads the
// table's rows, clicks the row of task NAME (a search for its name) and reports the search's
// count, as one JSON object:
//   {"rows": [{"name", "spawned", "polls", "busyNs", "scheduledNs", "idleNs", "longPolls"}],
//    "found": "12 found" | null, "total": n, "errors": [...]}
//
// Usage: node view-tasks.mjs URL NAME SCREENSHOT [TIMEOUT_SECONDS]
// Chromium: $CHROMIUM, else /usr/bin/chromium.
import { check } from './page.mjs'

const [url, name, screenshot, timeoutArg] = process.argv.slice(2)
if (!url || !name || !screenshot) {
  console.error('usage: node view-tasks.mjs URL NAME SCREENSHOT [TIMEOUT_SECONDS]')
  process.exit(2)
}
const timeout = 1000 * Number(timeoutArg || 120)
const result = { rows: null, found: null, total: null, errors: [] }

await check(result, timeout, async page => {
  await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
  await page.click('#tasks-button')
  await page.waitForFunction(() => document.querySelector('#results table#tasks tr[data-name]'), { timeout, polling: 50 })
  result.rows = await page.evaluate(() => [...document.querySelectorAll('#tasks tr[data-name]')].map(r => {
    const d = r.dataset
    return { name: d.name, spawned: Number(d.spawned), polls: Number(d.polls), busyNs: Number(d.busyNs),
      scheduledNs: Number(d.scheduledNs), idleNs: Number(d.idleNs), longPolls: Number(d.longPolls) }
  }))
  const clicked = await page.evaluate(name => {
    const row = [...document.querySelectorAll('#tasks tr[data-name]')].find(r => r.dataset.name === name)
    if (!row) return false
    row.click()
    return true
  }, name)
  if (!clicked) throw new Error(`no row for task ${name}`)
  // The search for the task's name: its slices listed and counted.
  await page.waitForFunction(n => {
    const s = window.phosphorView.search
    return s && s.q === n && /found|of/.test(document.getElementById('search-at').textContent)
  }, { timeout, polling: 50 }, name)
  result.total = await page.evaluate(() => window.phosphorView.search.total)
  result.found = await page.evaluate(() => document.getElementById('results').dataset.total || null)
  await page.screenshot({ path: screenshot })
})
