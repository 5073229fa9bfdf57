// What each frame draws. A pan or zoom moves every track in sight from its kept picture
// (`moveTracks`; bands.js's `compose`), which is cheap whatever the track holds. New answers are
// drawn in the frames after they come (`drawSoon`), a band of levels at a time, until about
// BUDGET_MS of drawing in a frame while the view moves (at least one band), so that a tall track
// is spread over frames rather than holding one. Tracks out of sight are not drawn: when they
// come into sight (a scroll, or the layout moving them), they are moved to the view and their
// stale bands drawn.
//
// Every piece of drawing is logged in `state.work` ([start, milliseconds, kind, bands or tracks
// drawn]; kinds: 'move', a pan or zoom's frame; 'new', answers drawn; 'sight', tracks come into
// sight), so that the benchmark (scripts/browser/view-bench.mjs) tells frames apart by what they
// drew.

import { drawFlow, state } from './view.js'
import { draw, paint } from './draw.js'
import { compose, drawBands, inSight, isSlices, layoutChanged, measure, shows, sight, stale, upToDate } from './bands.js'

// The drawing a frame does, in milliseconds: BUDGET_MS while the view moves (a move in the last
// MOVING_MS; new data is drawn for what the move's own drawing left of it), REST_BUDGET_MS while it
// rests (a longer frame then holds up only the next bands). `state.budgetMs` overrides both (tests
// set 0 to draw one band a frame).
export const BUDGET_MS = 8
export const REST_BUDGET_MS = 20
const MOVING_MS = 100

// Tracks with new data (or a redraw) to draw, in the order it came.
const queue = new Set()
let armed = null
// The drawing of moves and of tracks come into sight since new data was last drawn, and when the
// last of it ended: taken from the frame's budget (if within a frame's time).
let spent = 0, spentAt = -Infinity, movedAt = -Infinity

// Logs drawing work of `kind` begun at `t0` (performance.now()).
export function note(kind, t0, pieces) {
  const t = performance.now()
  if (kind === 'move') movedAt = t
  if (kind !== 'new') {
    spent = (t0 - spentAt < 16 ? spent : 0) + t - t0
    spentAt = t
  }
  state.work.push([t0, t - t0, kind, pieces])
  if (state.work.length > 4000) state.work.splice(0, 2000)
}

// Draws `track` in the next frames (within the budget), if it is in sight then; else when it
// comes into sight.
export function drawSoon(track) {
  queue.add(track)
  arm()
}

function arm() {
  if (armed) return
  // The next frame, or 50 ms where frames are not drawn (a hidden page): whichever comes first.
  armed = { frame: requestAnimationFrame(run), timeout: setTimeout(run, 50) }
}

function run() {
  cancelAnimationFrame(armed.frame)
  clearTimeout(armed.timeout)
  armed = null
  const t0 = performance.now()
  const moved = t0 - spentAt < 16 ? spent : 0
  const ms = state.budgetMs ?? (t0 - movedAt < MOVING_MS ? BUDGET_MS : REST_BUDGET_MS)
  const budget = { deadline: t0 + Math.max(0, ms - moved), done: 0 }
  spent = 0
  const s = sight()
  for (const t of queue) {
    if (budget.done && performance.now() > budget.deadline) break
    if (!inSight(t, s)) {
      queue.delete(t)
      continue
    }
    if (!isSlices(t)) {
      draw(t)
      budget.done++
      queue.delete(t)
    } else if (drawBands(t, budget, s)) queue.delete(t)
  }
  if (budget.done) note('new', t0, budget.done)
  if (queue.size) arm()
  else {
    drawFlow()
    fresh()
  }
}

// A frame of a pan or zoom: every track in sight moved to the view (a counter drawn again), unless
// it shows it already (a pan held by the margin past the traces' ends); those whose data or looks
// changed drawn in the next frames.
export function moveTracks() {
  const s = sight()
  for (const t of state.tracks) {
    if (!inSight(t, s) || upToDate(t, s, true)) continue
    if (!isSlices(t)) draw(t)
    else {
      if (!shows(t, s)) compose(t, s)
      if (stale(t, s, false)) drawSoon(t)
    }
  }
}

// Tracks that came into sight (scrolled, or moved by the layout) are moved to the view, and
// their stale bands drawn in the next frames; with `redo` (no answer on its way: the end of a
// round, or none pending), so are those moved to the view since they were drawn.
export function seeTracks(redo = state.pending === 0) {
  const t0 = performance.now()
  const s = sight()
  let moved = false
  for (const t of state.tracks) {
    if (!inSight(t, s) || upToDate(t, s, true)) continue
    if (!isSlices(t)) {
      drawSoon(t)
      continue
    }
    if (!shows(t, s)) {
      compose(t, s)
      moved = true
    }
    if (stale(t, s, redo)) drawSoon(t)
  }
  if (moved) note('sight', t0)
}

// Whether every track in sight shows its data drawn at the view (nothing left to draw); `now`:
// in sight as the page is laid out now (a scroll whose event is still to come included).
export const drawnInSight = now => {
  const s = now ? measure() : sight()
  return state.tracks.every(t => upToDate(t, s, true))
}

// New detail: once the answers of a round's tracks in sight (`view` its view) are in, the first
// moment all of them are drawn is kept in `state.fresh` ({view, answered, at, n}; the benchmark's
// new detail after a move).
let waiting = null
export function answeredInSight(view) {
  waiting = { view, answered: performance.now() }
  fresh()
}

function fresh() {
  if (!waiting || queue.size || !drawnInSight()) return
  const n = state.fresh ? state.fresh.n + 1 : 1
  state.fresh = { ...waiting, at: performance.now(), n }
  waiting = null
}

// Watches the tracks coming into sight; starts the work log.
export function listenFrames() {
  state.work = []
  // A copy of a track drawn whole at once on a canvas of its own, as a click draws it (tests
  // compare it with what the frames drew).
  state.drawWhole = track => {
    const canvas = document.createElement('canvas')
    Object.assign(canvas, { width: track.canvas.width, height: track.canvas.height, cssWidth: track.canvas.cssWidth, cssHeight: track.canvas.cssHeight })
    const copy = { ...track, canvas, bitmap: null, stamp: null, drawLog: null }
    paint(copy)
    return copy
  }
  const root = document.getElementById('tracks')
  const look = () => {
    layoutChanged()
    seeTracks()
  }
  root.addEventListener('scroll', look, { passive: true })
  new ResizeObserver(look).observe(root)
  // A track moved into sight by the layout (another collapsed, a heading's text longer) has no
  // scroll: the tracks' box is watched for changes of what it holds, and each canvas for coming
  // into sight.
  const seen = new IntersectionObserver(look, { root })
  new MutationObserver(records => {
    layoutChanged()
    if (!records.some(r => r.type === 'childList' && r.target === root)) return
    seen.disconnect()
    for (const t of state.tracks) seen.observe(t.canvas)
  }).observe(root, { childList: true, subtree: true, characterData: true, attributes: true, attributeFilter: ['style', 'class', 'hidden'] })
}
