// Issue 39's frames, checked in headless Chromium on a running `phosphor view` (the Rust test:
// crates/phosphor-cli/tests/it/view_frames.rs). The page is loaded with its drawing logged
// (`?drawlog`), in a box too short for all its tracks, and gives:
//
//   unseen    the tracks wholly out of sight once the page is drawn: what each drew (nothing is
//             drawn until it scrolls in);
//   order     after a pan, the tracks the page asked for, in the order asked, and which were in
//             sight (those in sight are asked first);
//   work      the page's drawing while pans and zooms follow each other a frame apart, one band a
//             frame (`phosphorView.budgetMs = 0`): the bands (or tracks) each frame drew;
//   compared  then, once idle (and again after the same moves at the page's own budget), each
//             track scrolled into sight: its rows in sight as drawn in parts
//             over frames against a copy of it drawn whole at once on a canvas of its own
//             (`phosphorView.drawWhole`): the pixels that differ, and whether the drawing logs
//             differ.
//
// Usage: node view-frames.mjs URL PARAMS.json TIMEOUT_SECONDS
//   PARAMS: {"width": CSS_PX, "height": CSS_PX, "moves": [["pan", 0.03] | ["zoom", 0.8], ...]}
// Prints {"errors": [...], "unseen": [...], "order": {...}, "work": [...], "compared": [...]}.
import { readFileSync } from 'node:fs'
import { check, waitIdle } from './page.mjs'

const [url, paramsPath, timeoutS] = process.argv.slice(2)
const params = JSON.parse(readFileSync(paramsPath, 'utf8'))
const timeout = 1000 * Number(timeoutS || 120)
const result = { errors: [], unseen: [], order: null, work: [], compared: [] }

// Which tracks are in sight of the tracks' box (as laid out now).
const inSight = () => {
  const box = document.getElementById('tracks').getBoundingClientRect()
  return window.phosphorView.tracks.map(t => {
    const r = t.canvas.getBoundingClientRect()
    return r.bottom > box.top && r.top < box.bottom
  })
}

// Each track in sight at each place of the box (scrolled over all of them), drawn in parts,
// against a copy of it drawn whole (into `result.compared`, each tagged `how`).
async function compare(page, how) {
  const height = await page.evaluate(() => document.getElementById('tracks').scrollHeight)
  const box = await page.evaluate(() => document.getElementById('tracks').clientHeight)
  for (let at = 0; at < height; at += box) {
    await page.evaluate(y => { document.getElementById('tracks').scrollTop = y }, at)
    await waitIdle(page, timeout)
    result.compared.push(...await page.evaluate(how => {
      const v = window.phosphorView
      const root = document.getElementById('tracks').getBoundingClientRect()
      const out = []
      for (const t of v.tracks) {
        const r = t.canvas.getBoundingClientRect()
        const top = Math.max(0, Math.floor(root.top - r.top)), bottom = Math.min(t.height, Math.ceil(root.bottom - r.top))
        if (bottom <= top) continue
        const k = t.canvas.width / r.width
        const rows = c => c.getContext('2d').getImageData(0, Math.round(top * k), c.width, Math.round((bottom - top) * k)).data
        const sorted = log => JSON.stringify([...(log || [])].filter(d => d[1] * 18 < bottom && d[1] * 18 + 18 > top).sort())
        const copy = v.drawWhole(t)
        const parts = rows(t.canvas), partsLog = sorted(t.drawLog)
        const whole = rows(copy.canvas), wholeLog = sorted(copy.drawLog)
        let differ = 0, painted = 0
        for (let i = 0; i < whole.length; i += 4) {
          if (whole[i + 3]) painted++
          if (whole[i] !== parts[i] || whole[i + 1] !== parts[i + 1] || whole[i + 2] !== parts[i + 2] || whole[i + 3] !== parts[i + 3]) differ++
        }
        out.push({ how, name: t.name, kind: t.kind, rows: [top, bottom], painted, differ, logs_differ: partsLog !== wholeLog, logged: (t.drawLog || []).length })
      }
      return out
    }, how))
  }
}

await check(result, timeout, async page => {
  // The tracks asked for, in order: the `tid`, `async` or `counter` of each window request.
  const asked = []
  page.on('request', req => {
    const u = new URL(req.url())
    if (!/^\/api\/(slices|points|samples|context|heap)$/.test(u.pathname)) return
    const q = u.searchParams
    asked.push(q.has('tid') ? `t${q.get('tid')}` : q.has('async') ? `a${q.get('async')}` : `c${q.get('counter')}`)
  })
  await page.goto(`${url}?drawlog=1`, { timeout, waitUntil: 'domcontentloaded' })
  await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
  await waitIdle(page, timeout)
  const keys = await page.evaluate(() => window.phosphorView.tracks.map(t => (t.kind === 'thread' ? `t${t.tid}` : t.kind === 'async' ? `a${t.async}` : `c${t.counter}`)))

  const sight = await page.evaluate(inSight)
  result.unseen = await page.evaluate(sight => window.phosphorView.tracks
    .filter((t, i) => !sight[i])
    .map(t => ({ name: t.name, kind: t.kind, has_data: !!t.data, drawn: t.drawn, logged: t.drawLog ? t.drawLog.length : null })), sight)

  // A pan: the order its requests were made in.
  asked.length = 0
  await page.evaluate(() => window.phosphorView.pan(0.1))
  await waitIdle(page, timeout)
  result.order = { asked: [...asked], in_sight: keys.filter((k, i) => sight[i]), out_of_sight: keys.filter((k, i) => !sight[i]) }

  // Moves a frame apart while answers come: one band drawn a frame, then with the page's own
  // budget (bands drawn together as they fit); each time, once idle, every track compared.
  for (const budget of [0, null]) {
    const from = await page.evaluate(async (moves, budget) => {
      const pv = window.phosphorView
      pv.budgetMs = budget ?? undefined
      document.getElementById('tracks').scrollTop = 0
      const from = performance.now()
      for (const [move, by] of moves) {
        pv[move](by)
        await new Promise(r => requestAnimationFrame(r))
      }
      return from
    }, params.moves, budget)
    await waitIdle(page, timeout)
    const work = await page.evaluate(from => window.phosphorView.work.filter(w => w[0] >= from && w[2] === 'new').map(w => w[3]), from)
    if (budget === 0) result.work = work
    await compare(page, budget === 0 ? 'one band a frame' : "the page's budget")
  }
}, params.width + 640, params.height)
