// The benchmark of `phosphor view` (issue 21's targets), driven by scripts/bench-view.sh. It runs
// the viewer itself, on one trace, and measures:
//
//   launch   twice: cold (no index beside the trace) and warm (the index the cold launch wrote).
//            Headless Chromium is started first, then the server; times run from the server's
//            spawn to the page's `data-stage` becoming 'coarse' and 'complete' (stamped in the page
//            as the attribute changes). The server's memory is read from /proc/PID/status every
//            50 ms (VmRSS) and at each stage and at the end (VmHWM, the kernel's peak).
//   pan      in the browser, after the cold launch: phosphorView.pan(0.02) 100 times, a frame
//            (requestAnimationFrame) between, on the whole trace and zoomed in 100x; the
//            synchronous redraws (phosphorView.frames); then how long a pan takes to be drawn
//            with fresh answers.
//   queries  over HTTP, on the cold launch's server once the page is done: every track's window
//            (slices and points of threads, slices of async tracks, samples of counters) at the
//            whole trace, 1/10, 1/1000 and 1/100000 of it at seeded random places, 1600 px wide;
//            time to the last byte and answer size; `--query-runs` times over, the run with the
//            median total time reported. Then /api/search and /api/stats of the whole trace.
//
// Usage: node view-bench.mjs --bin PHOSPHOR --trace FILE --out RESULTS.json
//          [--query-runs N] [--places N] [--px N] [--timeout SECONDS] [--label TEXT]
//          [--decoded-bytes N]   (the trace's size decoded, for the server's RSS as a share of it)
//          [--only frames]       (only the frames: one launch with the index kept, then panning
//                                 and zooming; no cold launch, queries or warm launch)
//          [--assets DIR]        (the page's scripts and style served from DIR instead of the
//                                 binary's: an instrumented copy of another version's, say)
// Prints Markdown tables on stdout; writes every figure as JSON to RESULTS.json. Chromium:
// $CHROMIUM, else /usr/bin/chromium.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, rmSync, statSync, writeFileSync, openSync } from 'node:fs'
import { createInterface } from 'node:readline'
import http from 'node:http'
import { performance } from 'node:perf_hooks'
import { launch as launchChromium, open } from './page.mjs'

const opts = { queryRuns: 3, places: 5, px: 1600, timeout: 1800, label: '', decodedBytes: 0, only: '', assets: '' }
{
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(\w)/g, (_, c) => c.toUpperCase())
    if (!(key in opts) && !['bin', 'trace', 'out'].includes(key)) {
      console.error(`unknown option ${argv[i]}`)
      process.exit(2)
    }
    opts[key] = typeof opts[key] === 'number' ? Number(argv[i + 1]) : argv[i + 1]
  }
  // (page.mjs serves the page's files from there.)
  if (opts.assets) process.env.PHOSPHOR_VIEW_ASSETS = opts.assets
  if (!opts.bin || !opts.trace || !opts.out) {
    console.error('usage: node view-bench.mjs --bin PHOSPHOR --trace FILE --out RESULTS.json [--query-runs N] [--places N] [--px N] [--timeout S] [--label TEXT]')
    process.exit(2)
  }
}
const timeout = 1000 * opts.timeout
const indexPath = `${opts.trace}.phview`
const fileBytes = statSync(opts.trace).size
const MiB = 1024 * 1024
const now = () => performance.timeOrigin + performance.now()
const sleep = ms => new Promise(r => setTimeout(r, ms))
const log = (...a) => console.error('[view-bench]', ...a)

// --- figures -------------------------------------------------------------------------------------

function quantile(values, q) {
  if (!values.length) return null
  const v = [...values].sort((a, b) => a - b)
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))]
}
const median = v => quantile(v, 0.5)
const max = v => (v.length ? Math.max(...v) : null)
const min = v => (v.length ? Math.min(...v) : null)
function summary(values) {
  return { n: values.length, min: min(values), median: median(values), p95: quantile(values, 0.95), p99: quantile(values, 0.99), max: max(values) }
}

// A seeded generator (mulberry32), so that every run asks for the same windows.
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// --- the server and its memory -------------------------------------------------------------------

function status(pid) {
  const out = {}
  try {
    for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
      const m = /^(VmHWM|VmRSS|RssAnon|RssFile|RssShmem):\s+(\d+) kB/.exec(line)
      if (m) out[m[1]] = Number(m[2]) * 1024
    }
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime and stime (fields 14 and 15 of the whole line), in clock ticks of 1/100 s.
    out.cpu_s = (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return null
  }
  return out
}

// Starts `phosphor view --no-open TRACE`; resolves once it printed its URL.
async function startServer(logName) {
  const t0 = now()
  const err = openSync(logName, 'w')
  const child = spawn(opts.bin, ['view', '--no-open', opts.trace], { stdio: ['ignore', 'pipe', err] })
  const server = { child, pid: child.pid, t0, samples: [], peakSampled: 0, exited: null }
  child.on('exit', (code, signal) => { server.exited = { code, signal } })
  server.sampler = setInterval(() => {
    const s = status(child.pid)
    if (!s) return
    server.peakSampled = Math.max(server.peakSampled, s.VmRSS || 0)
    server.samples.push([Math.round(now() - t0), s.VmRSS, s.RssAnon, s.RssFile])
  }, 50)
  const lines = createInterface({ input: child.stdout })
  server.url = await new Promise((resolve, reject) => {
    lines.once('line', resolve)
    child.once('exit', () => reject(new Error(`phosphor view exited before printing its URL (see ${logName})`)))
  })
  lines.on('line', () => {})
  server.urlMs = now() - t0
  return server
}

async function stopServer(server) {
  const end = status(server.pid)
  clearInterval(server.sampler)
  if (!server.exited) {
    const gone = new Promise(r => server.child.once('exit', r))
    server.child.kill('SIGTERM')
    await gone
  }
  return end
}

function memoryOf(s) {
  if (!s) return null
  return { hwm_mib: s.VmHWM / MiB, rss_mib: s.VmRSS / MiB, anon_mib: s.RssAnon / MiB, file_mib: s.RssFile / MiB, hwm_pct_of_file: 100 * s.VmHWM / fileBytes, cpu_s: s.cpu_s }
}

// --- the browser -------------------------------------------------------------------------------

// Frames not held to the display's 60 Hz: a frame interval is then the frame's own work.
const browser = await launchChromium(timeout, ['--disable-frame-rate-limit', '--disable-gpu-vsync'])

// The page's canvases are the window less the labels (200 px), the side panel (440 px) and the
// tracks' scroll bar if it takes room (headless Chromium's overlay ones do not); pan() corrects it.
const viewport = { width: opts.px + 640, height: 1000, deviceScaleFactor: 1 }

async function newPage(errors) {
  const page = await open(browser, errors, viewport.width, viewport.height)
  // Stamps each change of the page's stage (and the frame after it) in wall-clock milliseconds.
  await page.evaluateOnNewDocument(() => {
    window.__stages = []
    const stamp = () => performance.timeOrigin + performance.now()
    new MutationObserver(() => {
      const stage = document.body && document.body.dataset.stage
      if (!stage || (window.__stages.length && window.__stages[window.__stages.length - 1].stage === stage)) return
      const entry = { stage, at: stamp(), frame: null, width: null }
      const c = document.querySelector('#tracks canvas')
      entry.width = c ? c.width : null
      window.__stages.push(entry)
      requestAnimationFrame(() => { entry.frame = stamp() })
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-stage'] })
  })
  return page
}

// More answers than `after`, none pending, and (where the page says) nothing left to fetch or draw.
const settled = (page, after) =>
  page.waitForFunction(n => {
    const v = window.phosphorView
    return v.pending === 0 && v.answered > n && (!v.idle || v.idle())
  }, { timeout, polling: 10 }, after)

// One launch: the page is open before the server starts; the server is left running.
async function launch(name) {
  const errors = []
  const page = await newPage(errors)
  const server = await startServer(`${opts.out.replace(/\.json$/, '')}-${name}.log`)
  log(`${name}: serving at ${server.url} after ${server.urlMs.toFixed(0)} ms`)
  // When the server itself says the trace is indexed (the page asks every 250 ms).
  let indexReadyMs = null
  const polling = (async () => {
    while (!server.exited) {
      try {
        const { done } = await (await fetch(server.url + 'api/traces')).json()
        if (done) { indexReadyMs = now() - server.t0; return }
      } catch { /* not yet */ }
      await sleep(50)
    }
  })()
  await page.goto(server.url, { timeout, waitUntil: 'domcontentloaded' })
  let coarseHwm = null
  // The memory at the coarse stage, if there is one, while waiting for the complete one.
  const watch = (async () => {
    for (;;) {
      const st = await page.evaluate(() => document.body && document.body.dataset.stage).catch(() => null)
      if (st === 'coarse' && !coarseHwm) coarseHwm = status(server.pid)
      if (st === 'complete' || server.exited) return
      await sleep(100)
    }
  })()
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready === true, { timeout, polling: 20 })
  await watch
  await polling
  const atComplete = status(server.pid)
  await page.waitForFunction(() => window.__stages.every(s => s.frame !== null), { timeout: 5000, polling: 20 }).catch(() => {})
  const stages = await page.evaluate(() => window.__stages)
  const info = await page.evaluate(() => ({
    tracks: window.phosphorView.tracks.map(t => ({ kind: t.kind, name: t.name, width: t.canvas.width, css_width: t.canvas.getBoundingClientRect().width })),
    ruler: document.getElementById('ruler').width,
  }))
  const at = s => stages.find(e => e.stage === s)
  const result = {
    url_ms: server.urlMs,
    coarse_ms: at('coarse') ? at('coarse').at - server.t0 : null,
    coarse_frame_ms: at('coarse') && at('coarse').frame ? at('coarse').frame - server.t0 : null,
    coarse_canvas_px: at('coarse') ? at('coarse').width : null,
    index_ready_ms: indexReadyMs,
    complete_ms: at('complete') ? at('complete').at - server.t0 : null,
    complete_frame_ms: at('complete') && at('complete').frame ? at('complete').frame - server.t0 : null,
    canvas_px: info.tracks.length ? info.tracks[0].width : null,
    canvas_px_all: [...new Set(info.tracks.map(t => t.width))],
    tracks: info.tracks.map(t => `${t.kind}:${t.name}`),
    memory_at_coarse: memoryOf(coarseHwm),
    memory_at_complete: memoryOf(atComplete),
    index_bytes: existsSync(indexPath) ? statSync(indexPath).size : null,
    errors,
  }
  log(`${name}: coarse ${result.coarse_ms && result.coarse_ms.toFixed(0)} ms, complete ${result.complete_ms && result.complete_ms.toFixed(0)} ms, canvas ${result.canvas_px} px, peak RSS ${result.memory_at_complete && result.memory_at_complete.hwm_mib.toFixed(1)} MiB`)
  return { page, server, result }
}

// `steps` moves (`move` names the page's call: 'pan' or 'zoom', by `by`), a frame
// (requestAnimationFrame) between; the page's synchronous redraw times, the intervals between
// frames, and, where the page logs its drawing (`phosphorView.work`: [start, ms, kind]), the
// drawing each interval held by kind.
async function moveLoop(page, move, steps, by) {
  return page.evaluate(async (move, steps, by) => {
    const pv = window.phosphorView
    pv.frames.length = 0
    const intervals = []
    const ends = []
    let last = performance.now()
    const first = last
    for (let i = 0; i < steps; i++) {
      pv[move](by)
      await new Promise(r => requestAnimationFrame(r))
      const t = performance.now()
      intervals.push(t - last)
      ends.push(t)
      last = t
    }
    // The drawing of each interval (begun in it), by kind.
    const work = (pv.work || []).filter(w => w[0] >= first && w[0] < last)
    const drawing = ends.map(() => ({}))
    let k = 0
    for (const [at, ms, kind] of work) {
      while (k < ends.length && ends[k] <= at) k++
      if (k === ends.length) break
      drawing[k][kind] = (drawing[k][kind] || 0) + ms
    }
    return { frames: [...pv.frames], intervals, drawing: pv.work ? drawing : null, view: [pv.view.start, pv.view.end] }
  }, move, steps, by)
}
const panLoop = (page, steps, fraction) => moveLoop(page, 'pan', steps, fraction)
const zoomLoop = (page, steps, factor) => moveLoop(page, 'zoom', steps, factor)

// The frame intervals by what their frame drew: 'new' (new answers drawn in it), 'move' (only
// a pan or zoom's redraw), 'none' (nothing of the page's); with the drawing's own milliseconds.
function byCause(loops) {
  if (loops.some(l => !l.drawing)) return null
  const groups = { new: [], move: [], none: [] }
  const drawn = { new: [], move: [], none: [] }
  for (const l of loops) {
    l.intervals.forEach((ms, i) => {
      const d = l.drawing[i]
      const cause = d.new !== undefined ? 'new' : d.move !== undefined ? 'move' : 'none'
      groups[cause].push(ms)
      drawn[cause].push(Object.values(d).reduce((a, b) => a + b, 0))
    })
  }
  return Object.fromEntries(Object.keys(groups).map(k => [k, { intervals: summary(groups[k]), drawing: summary(drawn[k]) }]))
}

// `steps` moves (`move`: 'pan' by `by`, or 'zoom' by `by` and 1/`by` alternately), each waited
// for until every track is drawn again from fresh answers (any wait of the page's before it asks
// included; `all`, in milliseconds), and, where the page stamps it (`phosphorView.fresh`), until
// the tracks in sight are (`sight`, the page's own clock: no polling in it; `answered`, until
// their answers were all in).
async function moveSettled(page, move, steps, by) {
  const all = [], sight = [], answered = []
  for (let i = 0; i < steps; i++) {
    const f = move === 'zoom' && i % 2 === 1 ? 1 / by : by
    const n = await page.evaluate(() => window.phosphorView.answered)
    const [t0, fresh] = await page.evaluate((move, f) => {
      const pv = window.phosphorView
      const t = performance.now()
      pv[move](f)
      return [t, pv.fresh ? pv.fresh.n : null]
    }, move, f)
    if (fresh !== null) {
      await page.waitForFunction(n => {
        const pv = window.phosphorView
        return pv.fresh.n > n && pv.fresh.view.start === pv.view.start && pv.fresh.view.end === pv.view.end
      }, { timeout, polling: 10 }, fresh)
      const f = await page.evaluate(() => window.phosphorView.fresh)
      sight.push(f.at - t0)
      answered.push(f.answered - t0)
    }
    await settled(page, n)
    all.push(await page.evaluate(() => performance.now()) - t0)
  }
  return { all, sight, answered }
}

async function pan(page) {
  const out = {}
  const span = await page.evaluate(() => [window.phosphorView.span.start, window.phosphorView.span.end])
  // The canvases must be `px` wide; the window is made so if the scroll bar was not as assumed.
  const width = await page.evaluate(() => window.phosphorView.tracks[0].canvas.width)
  if (width !== opts.px) {
    viewport.width += opts.px - width
    let n = await page.evaluate(() => window.phosphorView.answered)
    await page.setViewport(viewport)
    await settled(page, n)
    out.viewport_adjusted = viewport.width
  }
  out.canvas_px = await page.evaluate(() => window.phosphorView.tracks[0].canvas.width)
  const show = async (s, e) => {
    const n = await page.evaluate(() => window.phosphorView.answered)
    await page.evaluate((s, e) => window.phosphorView.show(s, e), s, e)
    await settled(page, n)
  }
  const cases = [['whole', span[0], span[1]]]
  const mid = (span[0] + span[1]) / 2, w = (span[1] - span[0]) / 100
  cases.push(['zoom100', mid - w / 2, mid + w / 2])
  for (const [name, s, e] of cases) {
    await show(s, e)
    // What a redraw draws: the items (slices, runs, points, samples) each kind of track holds.
    const items = await page.evaluate(() => {
      const out = {}
      for (const t of window.phosphorView.tracks) {
        const d = t.data || {}
        let n = 0
        if (d.slices) n += d.slices.levels.reduce((a, l) => a + l.length, 0)
        if (d.points) n += d.points.points.length
        if (d.samples) n += d.samples.samples.length
        out[t.kind] = (out[t.kind] || 0) + n
      }
      return out
    })
    const loop = await panLoop(page, 100, 0.02)
    await show(s, e)
    const back = await panLoop(page, 100, -0.02)
    await show(s, e)
    const fresh = await moveSettled(page, 'pan', 10, 0.1)
    await show(s, e)
    const zin = await zoomLoop(page, 50, 0.9)
    const zout = await zoomLoop(page, 50, 1 / 0.9)
    await show(s, e)
    const zfresh = await moveSettled(page, 'zoom', 10, 0.5)
    await show(s, e)
    const moves = [...loop.intervals, ...back.intervals, ...zin.intervals, ...zout.intervals]
    const sight = [...fresh.sight, ...zfresh.sight]
    // The tracks in sight, at the view (rows of the tracks' box), and how tall each is.
    const tracks = await page.evaluate(() => {
      const root = document.getElementById('tracks')
      return { box: [root.scrollTop, root.clientHeight], rows: window.phosphorView.tracks.map(t => [t.name, t.canvas.offsetTop, t.height]) }
    })
    out[name] = {
      window_ns: [s, e],
      items_drawn: items,
      tracks,
      frames: summary([...loop.frames, ...back.frames]),
      frame_intervals: summary([...loop.intervals, ...back.intervals]),
      fresh_drawn_ms: summary(fresh.all),
      zoom_frames: summary([...zin.frames, ...zout.frames]),
      move_intervals: summary(moves),
      move_causes: byCause([loop, back, zin, zout]),
      zoom_fresh_drawn_ms: summary(zfresh.all),
      fresh_all_ms: summary([...fresh.all, ...zfresh.all]),
      fresh_sight_ms: sight.length ? summary(sight) : null,
      fresh_sight_answered_ms: sight.length ? summary([...fresh.answered, ...zfresh.answered]) : null,
      raw: { frames: [...loop.frames, ...back.frames], intervals: [...loop.intervals, ...back.intervals], fresh: fresh.all, zoom_intervals: [...zin.intervals, ...zout.intervals], zfresh: zfresh.all, sight, drawing: [loop, back, zin, zout].map(l => l.drawing) },
    }
    log(`pan ${name}: redraw median ${out[name].frames.median.toFixed(2)} p95 ${out[name].frames.p95.toFixed(2)} max ${out[name].frames.max.toFixed(2)} ms; fresh median ${out[name].fresh_drawn_ms.median.toFixed(0)} ms`)
  }
  return out
}

// --- the window queries ---------------------------------------------------------------------------

// One request on a kept-alive connection (no time limit: a search or the statistics of a big trace
// take minutes); the time runs to the answer's last byte.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
function get(base, path) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    http.get(base + path, { agent }, res => {
      const parts = []
      res.on('data', d => parts.push(d))
      res.on('end', () => {
        const body = Buffer.concat(parts)
        resolve({ ms: performance.now() - t0, bytes: body.length, status: res.statusCode, body })
      })
      res.on('error', reject)
    }).on('error', reject)
  })
}

function windows(trace) {
  const rnd = random(21)
  const span = trace.end_ns - trace.start_ns
  const list = [{ zoom: 'whole', start: trace.start_ns, end: trace.end_ns }]
  for (const [zoom, div] of [['1/10', 10], ['1/1000', 1000], ['1/100000', 100000]]) {
    const w = Math.max(1, Math.floor(span / div))
    for (let i = 0; i < opts.places; i++) {
      const s = trace.start_ns + Math.floor(rnd() * (span - w))
      list.push({ zoom, start: s, end: s + w })
    }
  }
  return list
}

function requestsOf(traces) {
  const reqs = []
  for (const t of traces) {
    for (const win of windows(t)) {
      const q = `trace=${t.trace}&start=${win.start}&end=${win.end}&px=${opts.px}`
      for (const th of t.threads) {
        reqs.push({ kind: 'slices', track: `thread ${th.tid}`, zoom: win.zoom, path: `/api/slices?${q}&tid=${th.tid}` })
        if (th.points) reqs.push({ kind: 'points', track: `thread ${th.tid}`, zoom: win.zoom, path: `/api/points?${q}&tid=${th.tid}` })
      }
      for (const a of t.asyncs || []) reqs.push({ kind: 'async', track: `async ${a.name}`, zoom: win.zoom, path: `/api/slices?${q}&async=${a.async}` })
      for (const c of t.counters) reqs.push({ kind: 'samples', track: `counter ${c.name}`, zoom: win.zoom, path: `/api/samples?${q}&counter=${c.counter}` })
    }
  }
  return reqs
}

async function queries(base) {
  const { traces } = JSON.parse((await get(base, '/api/traces')).body)
  const reqs = requestsOf(traces)
  const runs = []
  for (let run = 0; run < opts.queryRuns; run++) {
    const rows = []
    for (const q of reqs) {
      const r = await get(base, q.path)
      if (r.status !== 200) throw new Error(`${q.path}: status ${r.status}: ${r.body.toString().slice(0, 200)}`)
      rows.push({ kind: q.kind, track: q.track, zoom: q.zoom, ms: r.ms, bytes: r.bytes })
    }
    const whole = []
    for (const path of ['/api/search?q=iteration', '/api/search?q=queue*', '/api/stats']) {
      try {
        const r = await get(base, path)
        if (r.status !== 200) throw new Error(`status ${r.status}: ${r.body.toString().slice(0, 200)}`)
        const body = JSON.parse(r.body)
        whole.push({ path, ms: r.ms, bytes: r.bytes, total: body.total ?? body.slices, what: body.total !== undefined ? 'found' : 'slices' })
      } catch (e) {
        whole.push({ path, ms: null, bytes: null, error: String(e.message || e) })
      }
    }
    // The statistics of a range (the middle tenth of the first trace) and the histogram of its
    // busiest row over it, as the page asks for them when a range is selected.
    const t = traces[0]
    const span = t.end_ns - t.start_ns
    const rs = Math.floor(t.start_ns + 0.45 * span), re = Math.floor(t.start_ns + 0.55 * span)
    const range = []
    try {
      const r = await get(base, `/api/stats?start=${rs}&end=${re}`)
      const body = JSON.parse(r.body)
      range.push({ what: 'stats of the middle tenth', ms: r.ms, bytes: r.bytes })
      const row = (body.rows || []).filter(x => x.path && x.type).sort((a, b) => (b.count || 0) - (a.count || 0))[0]
      if (row) {
        const k = await get(base, `/api/kind?trace=${row.trace ?? t.trace}&path=${encodeURIComponent(JSON.stringify(row.path))}&type=${row.type}&start=${rs}&end=${re}`)
        range.push({ what: `histogram of ${row.path.join('/')} over it`, ms: k.ms, bytes: k.bytes, status: k.status })
      }
    } catch (e) {
      range.push({ what: 'range', error: String(e.message || e) })
    }
    const total = rows.reduce((a, r) => a + r.ms, 0)
    runs.push({ total_ms: total, rows, whole, range })
    log(`query run ${run + 1}: ${rows.length} window queries, ${total.toFixed(0)} ms in all, max ${max(rows.map(r => r.ms)).toFixed(1)} ms; ${whole.map(w => `${w.path} ${w.error ? w.error : w.ms.toFixed(0) + ' ms'}`).join(', ')}`)
  }
  const order = runs.map((r, i) => [r.total_ms, i]).sort((a, b) => a[0] - b[0])
  const chosen = order[Math.floor((order.length - 1) / 2)][1]
  const by = (rows, key) => {
    const groups = {}
    for (const r of rows) (groups[r[key]] ||= []).push(r)
    return Object.fromEntries(Object.entries(groups).map(([k, g]) => [k, { n: g.length, ms: summary(g.map(r => r.ms)), bytes_max: max(g.map(r => r.bytes)) }]))
  }
  const summarize = run => ({
    total_ms: run.total_ms,
    all: { n: run.rows.length, ms: summary(run.rows.map(r => r.ms)), bytes_max: max(run.rows.map(r => r.bytes)), slowest: [...run.rows].sort((a, b) => b.ms - a.ms)[0], largest: [...run.rows].sort((a, b) => b.bytes - a.bytes)[0] },
    by_zoom: by(run.rows, 'zoom'),
    by_kind: by(run.rows, 'kind'),
    whole: run.whole,
    range: run.range,
  })
  return {
    px: opts.px,
    places_per_zoom: opts.places,
    requests_per_run: reqs.length,
    median_run: chosen,
    reported: summarize(runs[chosen]),
    runs: runs.map(summarize),
    raw: runs.map(r => r.rows),
  }
}

// --- the benchmark ---------------------------------------------------------------------------------

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number)
const results = { label: opts.label, trace: opts.trace, file_bytes: fileBytes, decoded_bytes: opts.decodedBytes || null, px: opts.px, started: new Date().toISOString(), loadavg_start: loadavg() }
try {
  if (opts.only === 'frames') {
    // The frames alone: the index kept (made first if there is none), one launch, the moves.
    log('launch for the frames (index kept)')
    const l = await launch('frames')
    results.frames_only = l.result
    results.pan = await pan(l.page)
    results.pan.errors = l.result.errors
    await l.page.close()
    await stopServer(l.server)
    throw null
  }
  rmSync(indexPath, { force: true })

  // Cold: no index. The page's launch, panning, then the queries on the same server.
  log('cold launch (no index)')
  const cold = await launch('cold')
  results.cold = cold.result
  results.pan = await pan(cold.page)
  results.pan.errors = cold.result.errors
  await cold.page.close()
  results.queries = await queries(cold.server.url.replace(/\/$/, ''))
  results.cold.memory_at_end = memoryOf(await stopServer(cold.server))
  results.cold.rss_sampled_peak_mib = cold.server.peakSampled / MiB
  results.cold.rss_samples = cold.server.samples

  // Warm: the index the cold launch wrote.
  log('warm launch (index kept)')
  const warm = await launch('warm')
  results.warm = warm.result
  await warm.page.close()
  // A run of queries more, for the warm server's memory while it answers.
  const saved = opts.queryRuns
  opts.queryRuns = 1
  results.warm.queries = (await queries(warm.server.url.replace(/\/$/, ''))).reported
  opts.queryRuns = saved
  results.warm.memory_at_end = memoryOf(await stopServer(warm.server))
  results.warm.rss_sampled_peak_mib = warm.server.peakSampled / MiB
  results.warm.rss_samples = warm.server.samples
} catch (e) {
  if (e !== null) {
    results.error = String(e && e.stack ? e.stack : e)
    log(results.error)
  }
} finally {
  await browser.close()
}
results.loadavg_end = loadavg()
writeFileSync(opts.out, JSON.stringify(results, null, 1))
console.log(table(results))
if (results.error) process.exit(1)

// --- the report -----------------------------------------------------------------------------------

// Issue 39's figures against its targets.
function issue39(r) {
  const f = (v, d = 0) => (v === null || v === undefined ? '—' : Number(v).toFixed(d))
  const ok = (v, limit) => (v === null || v === undefined ? '' : v <= limit ? 'yes' : '**no**')
  const lines = ['Issue 39 targets:', '', '| measure | target | measured | within |', '|---|---|---:|---|']
  const decoded = r.decoded_bytes || null
  for (const [name, l] of [['cold', r.cold], ['warm', r.warm]]) {
    if (!l) continue
    lines.push(`| ${name} complete view | ${name === 'cold' ? '≤ 2 s' : '≤ 0.3 s'} | ${f(l.complete_ms / 1000, 2)} s | ${ok(l.complete_ms, name === 'cold' ? 2000 : 300)} |`)
    const m = l.memory_at_end
    if (m && decoded) {
      const pct = 100 * m.hwm_mib * MiB / decoded
      lines.push(`| ${name}: server peak RSS over the run / decoded trace (${f(decoded / MiB, 0)} MiB) | ≤ 25% | ${f(m.hwm_mib, 1)} MiB (${f(pct, 1)}%) | ${ok(pct, 25)} |`)
    }
  }
  if (r.cold && r.cold.index_bytes !== null) {
    const x = r.cold.index_bytes / r.file_bytes
    lines.push(`| index on disk / trace file (${f(r.file_bytes / MiB, 1)} MiB) | ≤ 2× | ${f(r.cold.index_bytes / MiB, 1)} MiB (${f(x, 2)}×) | ${ok(x, 2)} |`)
  }
  for (const [name, what] of [['whole', 'whole trace'], ['zoom100', 'zoomed in 100×']]) {
    const p = r.pan && r.pan[name]
    if (!p || !p.move_intervals) continue
    lines.push(`| pan/zoom frame interval p99 (${what}; 200 pans, 100 zooms, uncapped frame rate) | ≤ 16 ms | ${f(p.move_intervals.p99, 1)} ms (median ${f(p.move_intervals.median, 1)}, max ${f(p.move_intervals.max, 1)}) | ${ok(p.move_intervals.p99, 16)} |`)
    lines.push(`| new detail drawn after a move (${what}; 10 pans, 10 zooms; incl. any wait of the page's before it asks) | ≤ 100 ms | median ${f(p.fresh_all_ms.median, 0)}, p99 ${f(p.fresh_all_ms.p99, 0)}, max ${f(p.fresh_all_ms.max, 0)} ms | ${ok(p.fresh_all_ms.p99, 100)} |`)
    const c = p.move_causes
    if (c) {
      for (const [k, what2] of [['new', 'drawing new answers'], ['move', 'only moving'], ['none', 'drawing nothing']]) {
        const g = c[k]
        if (!g.intervals.n) continue
        lines.push(`| … frames ${what2} (${g.intervals.n} of ${p.move_intervals.n}): interval p99 (median, max); the page's drawing in them p99 (max) | | ${f(g.intervals.p99, 1)} ms (${f(g.intervals.median, 1)}, ${f(g.intervals.max, 1)}); ${f(g.drawing.p99, 1)} ms (${f(g.drawing.max, 1)}) | |`)
      }
    }
    if (p.fresh_sight_ms) {
      lines.push(`| new detail of the tracks in sight (${what}; the page's stamp) | ≤ 100 ms | median ${f(p.fresh_sight_ms.median, 0)}, p99 ${f(p.fresh_sight_ms.p99, 0)}, max ${f(p.fresh_sight_ms.max, 0)} ms | ${ok(p.fresh_sight_ms.p99, 100)} |`)
      const a = p.fresh_sight_answered_ms
      lines.push(`| … of which their answers all in: median / p99 | | ${f(a.median, 0)} / ${f(a.p99, 0)} ms | |`)
    }
  }
  const q = r.queries && r.queries.reported
  for (const x of (q && q.range) || []) {
    lines.push(`| ${x.what} | ≤ 300 ms | ${x.error ? `failed: ${x.error}` : `${f(x.ms, 0)} ms`} | ${x.error ? '' : ok(x.ms, 300)} |`)
  }
  return lines.join('\n')
}

function table(r) {
  const fileMiB = r.file_bytes / MiB
  const f = (v, d = 0) => (v === null || v === undefined ? '—' : Number(v).toFixed(d))
  const s = ms => (ms === null || ms === undefined ? '—' : `${(ms / 1000).toFixed(2)} s`)
  const mem = m => (m ? `${f(m.hwm_mib, 1)} MiB (${f(m.hwm_pct_of_file, 1)}%)` : '—')
  const ok = (v, limit) => (v === null || v === undefined ? '' : v <= limit ? 'yes' : '**no**')
  const mb = b => `${(b / 1e6).toFixed(3)} MB`
  const lines = []
  lines.push(`Trace: ${r.trace}, ${f(fileMiB, 1)} MiB${r.label ? ` (${r.label})` : ''}; canvases ${(r.cold || r.frames_only) ? (r.cold || r.frames_only).canvas_px : "—"} px wide at launch${r.pan && r.pan.canvas_px ? `, ${r.pan.canvas_px} px when panning` : ''}.`)
  lines.push(`Load average (1, 5, 15 min) at the start ${r.loadavg_start.join(', ')}, at the end ${(r.loadavg_end || []).join(', ')}.`)
  lines.push('')
  lines.push('| measure | target | measured | within |')
  lines.push('|---|---|---:|---|')
  const quarter = 0.25 * r.file_bytes / MiB
  for (const [name, l] of [['cold', r.cold], ['warm', r.warm]]) {
    if (!l) continue
    const what = name === 'cold' ? 'cold launch (no index)' : 'warm launch (index kept)'
    lines.push(`| ${what}: URL printed | — | ${s(l.url_ms)} | |`)
    lines.push(`| ${what}: coarse view drawn | — | ${l.coarse_ms === null ? 'not shown (complete first)' : s(l.coarse_ms)} | |`)
    lines.push(`| ${what}: index ready (/api/traces done, polled every 50 ms) | — | ${s(l.index_ready_ms)} | |`)
    lines.push(`| ${what}: complete view drawn | ≤ 2 s | ${s(l.complete_ms)} | ${ok(l.complete_ms, 2000)} |`)
    lines.push(`| ${what}: server CPU time to complete view | — | ${l.memory_at_complete ? f(l.memory_at_complete.cpu_s, 2) + ' s' : '—'} | |`)
    if (l.memory_at_coarse) lines.push(`| ${what}: peak RSS to coarse view | ≤ 25% (${f(quarter, 1)} MiB) | ${mem(l.memory_at_coarse)} | ${ok(l.memory_at_coarse.hwm_pct_of_file, 25)} |`)
    lines.push(`| ${what}: peak RSS to complete view | ≤ 25% (${f(quarter, 1)} MiB) | ${mem(l.memory_at_complete)} | ${ok(l.memory_at_complete && l.memory_at_complete.hwm_pct_of_file, 25)} |`)
    const n = r.queries ? r.queries.runs.length : 0
    const endWhat = name === 'cold' ? `incl. panning, ${n} query run${n === 1 ? '' : 's'}, searches, stats` : 'incl. 1 query run, searches, stats'
    lines.push(`| ${what}: peak RSS over the run (${endWhat}) | ≤ 25% (${f(quarter, 1)} MiB) | ${mem(l.memory_at_end)} | ${ok(l.memory_at_end && l.memory_at_end.hwm_pct_of_file, 25)} |`)
    if (l.memory_at_end) lines.push(`| ${what}: RSS at the end, anonymous / file-backed | — | ${f(l.memory_at_end.anon_mib, 1)} / ${f(l.memory_at_end.file_mib, 1)} MiB | |`)
  }
  if (r.cold && r.cold.index_bytes !== null) lines.push(`| index file (.phview) | — | ${f(r.cold.index_bytes / MiB, 1)} MiB (${f(100 * r.cold.index_bytes / r.file_bytes, 1)}%) | |`)
  const q = r.queries && r.queries.reported
  if (q) {
    lines.push(`| window queries (${q.all.n} a run, ${r.px} px; the median run of ${r.queries.runs.length}): max time | ≤ 50 ms | ${f(q.all.ms.max, 1)} ms | ${ok(q.all.ms.max, 50)} |`)
    lines.push(`| window queries: median / p95 time | — | ${f(q.all.ms.median, 1)} / ${f(q.all.ms.p95, 1)} ms | |`)
    lines.push(`| window queries: max answer size | ≤ 2 MB | ${mb(q.all.bytes_max)} | ${ok(q.all.bytes_max, 2e6)} |`)
    for (const w of q.whole) lines.push(`| ${w.path} (whole trace) | — | ${w.error ? `failed: ${w.error}` : `${f(w.ms, 0)} ms, ${mb(w.bytes)}, ${w.total} ${w.what}`} | |`)
  }
  for (const [name, what] of [['whole', 'whole trace'], ['zoom100', 'zoomed in 100×']]) {
    const p = r.pan && r.pan[name]
    if (!p) continue
    lines.push(`| panning (${what}), 200 × pan(±0.02): redraw median / p95 / max | ≤ 16 ms | ${f(p.frames.median, 2)} / ${f(p.frames.p95, 2)} / ${f(p.frames.max, 2)} ms | ${ok(p.frames.max, 16)} |`)
    if (p.items_drawn) lines.push(`| panning (${what}): items a redraw draws, by track kind | — | ${Object.entries(p.items_drawn).map(([k, n]) => `${k} ${n}`).join(', ')} | |`)
    lines.push(`| panning (${what}): frame interval median / p95 / max | — | ${f(p.frame_intervals.median, 1)} / ${f(p.frame_intervals.p95, 1)} / ${f(p.frame_intervals.max, 1)} ms | |`)
    lines.push(`| panning (${what}), pan(0.1) to fresh answers drawn: median / max | — | ${f(p.fresh_drawn_ms.median, 0)} / ${f(p.fresh_drawn_ms.max, 0)} ms | |`)
  }
  if (q) {
    lines.push('')
    lines.push(`Window queries by zoom and kind (the median run, #${r.queries.median_run + 1}; ${r.queries.places_per_zoom} random places per zoom below the whole trace):`)
    lines.push('')
    lines.push('| window | queries | median | p95 | max | max size |')
    lines.push('|---|---:|---:|---:|---:|---:|')
    for (const [k, g] of [...Object.entries(q.by_zoom), ...Object.entries(q.by_kind)]) {
      lines.push(`| ${k} | ${g.n} | ${f(g.ms.median, 2)} ms | ${f(g.ms.p95, 2)} ms | ${f(g.ms.max, 2)} ms | ${mb(g.bytes_max)} |`)
    }
    lines.push('')
    lines.push(`Slowest: ${q.all.slowest.kind} of ${q.all.slowest.track} at ${q.all.slowest.zoom}, ${f(q.all.slowest.ms, 1)} ms; largest: ${q.all.largest.kind} of ${q.all.largest.track} at ${q.all.largest.zoom}, ${mb(q.all.largest.bytes)}. Runs' totals: ${r.queries.runs.map(x => `${f(x.total_ms, 0)} ms (max ${f(x.all.ms.max, 1)})`).join(', ')}.`)
  }
  lines.push('', issue39(r))
  if (r.error) lines.push('', `Error: ${r.error.split('\n')[0]}`)
  return lines.join('\n')
}
