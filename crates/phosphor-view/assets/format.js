// How the timeline page writes times, sizes and colours: short durations for lists, exact times
// (to the nanosecond) for the details, ruler labels as precise as their tick step, bytes in
// KiB/MiB, and each name's colour from a palette whose colours all tell apart.

// A duration in three significant digits (lists and tables).
export function formatNs(ns) {
  const a = Math.abs(ns)
  if (a < 1e3) return `${Math.round(ns)} ns`
  if (a < 1e6) return `${(ns / 1e3).toPrecision(3)} µs`
  if (a < 1e9) return `${(ns / 1e6).toPrecision(3)} ms`
  return `${(ns / 1e9).toPrecision(4)} s`
}

const UNITS = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']]
const THIN = '\u2009'

// A time or duration to the nanosecond, its fraction grouped by threes: 45303250 is
// "45.303 250 ms", 3250 is "3.250 µs".
export function formatExact(ns) {
  const n = Math.round(ns)
  const a = Math.abs(n)
  const [unit, name] = UNITS.find(([u]) => a >= u) || UNITS[3]
  if (unit === 1) return `${n} ns`
  const digits = Math.round(Math.log10(unit))
  const frac = String(a % unit).padStart(digits, '0').replace(/(\d{3})(?=\d)/g, `$1${THIN}`)
  return `${n < 0 ? '-' : ''}${Math.floor(a / unit)}.${frac} ${name}`
}

// The unit a time of magnitude `ns` is written in.
const unitOf = ns => UNITS.find(([u]) => Math.abs(ns) >= u) || UNITS[3]

// `ns` in `unit` (by default its own) with as many decimals as a resolution of `res` nanoseconds
// needs: at a 500 ns resolution in ms, 45300500 is "45.3005 ms" and 45300000 "45.3000 ms".
export function formatTime(ns, res, unit = unitOf(Math.max(Math.abs(ns), res))) {
  const decimals = Math.min(9, Math.max(0, Math.ceil(Math.log10(unit[0] / res) - 1e-9)))
  let text = (ns / unit[0]).toFixed(decimals)
  if (/^-0(\.0*)?$/.test(text)) text = text.slice(1)
  return `${text} ${unit[1]}`
}

// The significant digits of a label ("45.3005 ms": 6).
const significant = text => text.replace(/\D/g, '').replace(/^0+/, '').length

// The ruler's ticks for the window `start`..`end` (ns on the timeline) of `width` pixels, labelled
// from `origin` (the traces' start): one every 1, 2 or 5 times a power of ten nanoseconds, about
// 100 pixels apart. Labels past 6 significant digits would crowd the ruler: then `offset` (ns
// from `origin`, a multiple of ten steps) is shown once and each tick reads "+" the time from it,
// as Perfetto does when zoomed in.
export function rulerTicks(start, end, origin, width) {
  const raw = (end - start) / Math.max(1, width / 100)
  const pow = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))))
  const step = [1, 2, 5, 10].map(m => m * pow).find(s => s >= raw) || 10 * pow
  const first = Math.ceil((start - origin) / step) * step
  const times = []
  for (let t = first; t + origin <= end; t += step) times.push(t)
  // One unit for all the ticks, that of the largest.
  const unit = times => unitOf(Math.max(step, ...times.map(Math.abs)))
  const whole = unit(times)
  const wide = times.some(t => significant(formatTime(t, step, whole)) > 6)
  if (!wide) return { step, offset: null, ticks: times.map(t => ({ t: t + origin, label: formatTime(t, step, whole) })) }
  const offset = Math.floor((start - origin) / (10 * step)) * 10 * step
  const rel = unit(times.map(t => t - offset))
  return {
    step,
    offset: { t: offset, label: formatTime(offset, 10 * step) },
    ticks: times.map(t => ({ t: t + origin, label: `+${formatTime(t - offset, step, rel)}` })),
  }
}

// Bytes in B, KiB, MiB or GiB, three significant digits.
export function formatBytes(n) {
  const a = Math.abs(n)
  if (!Number.isFinite(n)) return String(n)
  if (a < 1024) return `${n} B`
  const [div, name] = a < 1048576 ? [1024, 'KiB'] : a < 1073741824 ? [1048576, 'MiB'] : [1073741824, 'GiB']
  return `${Number((n / div).toPrecision(3))} ${name}`
}

// 24 colours that all tell apart (under black text): 12 hues 30° apart, light, then the 12 between
// them, darker. A name's colour is its FNV-1a hash's place in it, so that two names differ unless
// they share a place (not two hues 15° apart, as `batch` and `iteration` were on a 360° wheel).
const PALETTE = Array.from({ length: 24 }, (_, i) =>
  i < 12 ? `hsl(${30 * i}, 65%, 74%)` : `hsl(${30 * (i - 12) + 15}, 50%, 60%)`)

// Each name's colour, made once (a redraw may paint tens of thousands of slices); at most 10,000
// names are kept.
const colors = new Map()
export function color(name) {
  let c = colors.get(name)
  if (c !== undefined) return c
  let h = 2166136261
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619)
  c = PALETTE[(h >>> 0) % PALETTE.length]
  if (colors.size >= 10000) colors.clear()
  colors.set(name, c)
  return c
}

// The slices `phosphor::tokio` writes over a poll longer than its threshold (`long poll`, inside
// the poll's own slice) are flagged in one red, whatever colour their name would get; no name is
// given that red.
export const LONG_POLL = 'long poll'
export const LONG_POLL_FILL = '#d62728'
export const sliceColor = name => (name === LONG_POLL ? LONG_POLL_FILL : color(name))

// `text` cut to fit `width` pixels in `g`'s font, an ellipsis where it was cut ('' when not even a
// letter and the ellipsis fit). `widths` keeps each text's full width in that font (a redraw then
// measures only the names it cuts; at most 10,000 kept). The cut starts from the share of the
// letters that fits.
export function fitText(g, text, width, widths) {
  let full = widths.get(text)
  if (full === undefined) {
    full = g.measureText(text).width
    if (widths.size >= 10000) widths.clear()
    widths.set(text, full)
  }
  if (full <= width) return text
  let n = Math.min(text.length - 1, Math.floor(text.length * width / full))
  while (n > 0 && g.measureText(text.slice(0, n) + '…').width > width) n--
  return n === 0 ? '' : text.slice(0, n) + '…'
}

// The colours canvases draw outside slices (rulers, axes, counters, points) in the page's theme,
// read from view.css's variables (`readInk`) when the theme changes. A slice keeps its name's
// colour, and its label its dark text, in both themes (as in Perfetto).
export const ink = { text: '#333', muted: '#8a94a6', points: ['#357', '#283', '#d00', '#d00', '#d00'] }
export function readInk() {
  const css = getComputedStyle(document.documentElement)
  const v = (name, fallback) => css.getPropertyValue(name).trim() || fallback
  ink.text = v('--canvas-text', '#333')
  ink.muted = v('--canvas-muted', '#8a94a6')
  const problem = v('--point-problem', '#d00')
  ink.points = [v('--point-instant', '#357'), v('--point-log', '#283'), problem, problem, problem]
}

// The theme: the one chosen last (kept in the browser), else the system's (`prefers-color-scheme`).
const THEME_KEY = 'phosphor-theme'
export function theme() {
  const kept = localStorage.getItem(THEME_KEY)
  if (kept === 'dark' || kept === 'light') return kept
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light'
}

// Shows the page in `name` ('dark' or 'light'), kept for the next visit when `keep`.
export function setTheme(name, keep) {
  document.documentElement.dataset.theme = name
  if (keep) localStorage.setItem(THEME_KEY, name)
  readInk()
}
