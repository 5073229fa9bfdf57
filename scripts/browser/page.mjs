// What the browser checks share: headless Chromium ($CHROMIUM, else Debian's /usr/bin/chromium)
// launched as the tests need it, and a page that records its console errors and uncaught
// exceptions in `errors`.
import { existsSync, readFileSync } from 'node:fs'
import puppeteer from 'puppeteer-core'

// Chromium, headless; a CDP call may take `timeoutMs` (a long import, a slow page). Scrollbars
// are hidden (puppeteer's default) unless `scrollbars`.
export function launch(timeoutMs, extraArgs = [], { scrollbars = false } = {}) {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    protocolTimeout: timeoutMs + 60000,
    headless: true,
    ignoreDefaultArgs: scrollbars ? ['--hide-scrollbars'] : [],
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--enable-unsafe-swiftshader', ...extraArgs],
  })
}

// A new page of `width` × `height` whose console errors and exceptions go into `errors`. With
// $PHOSPHOR_VIEW_ASSETS set to a folder, the viewer's scripts and style are served from it instead
// of the binary's (a change to them tried without a build; the benchmark's `--assets`).
export async function open(browser, errors, width = 1600, height = 900) {
  const page = await browser.newPage()
  await page.setViewport({ width, height })
  const assets = process.env.PHOSPHOR_VIEW_ASSETS
  if (assets) {
    await page.setRequestInterception(true)
    page.on('request', req => {
      const m = /^\/([\w-]+\.(js|css))$/.exec(new URL(req.url()).pathname)
      if (!m || !existsSync(`${assets}/${m[1]}`)) return req.continue()
      req.respond({ status: 200, contentType: m[2] === 'js' ? 'text/javascript' : 'text/css', body: readFileSync(`${assets}/${m[1]}`, 'utf8') })
    })
  }
  page.on('console', msg => {
    if (msg.type() === 'error') errors.push(msg.text())
  })
  page.on('pageerror', e => errors.push(String(e && e.message ? e.message : e)))
  return page
}

// Runs `body(page)` on a page of its own (`width` × `height`) in headless Chromium, then prints
// `result` as one JSON object: a failure of `body` goes among its `errors`, and Chromium is closed
// whatever happens. `options` go to `launch`.
export async function check(result, timeoutMs, body, width = 1600, height = 900, options = {}) {
  const browser = await launch(timeoutMs, [], options)
  try {
    await body(await open(browser, result.errors, width, height))
  } catch (e) {
    result.errors.push(String(e && e.message ? e.message : e))
  } finally {
    await browser.close()
  }
  console.log(JSON.stringify(result))
}

// Scrolls the viewer's track of thread `t.tid` into view and clicks the middle of the slice `t`
// names ({tid, level, start, end}, times on the page's timeline) where the page draws it.
export async function clickSlice(page, t) {
  const point = await page.evaluate(t => {
    const track = window.phosphorView.tracks.find(k => k.kind === 'thread' && k.tid === t.tid)
    track.canvas.scrollIntoView({ block: 'center' })
    const r = track.canvas.getBoundingClientRect()
    const v = window.phosphorView.view
    const mid = (t.start + t.end) / 2
    return { x: r.left + (mid - v.start) / (v.end - v.start) * r.width, y: r.top + t.level * 18 + 9 }
  }, t)
  await page.mouse.click(point.x, point.y)
}

// Whether the viewer has drawn the detail of its view: `idle()` where the page has it (nothing
// scheduled or fetching), else no request pending.
const isIdle = () => {
  const v = window.phosphorView
  return v.idle ? v.idle() : v.pending === 0
}

// Waits until the viewer is idle.
export function waitIdle(page, timeout) {
  return page.waitForFunction(isIdle, { timeout, polling: 20 })
}

// Waits until the viewer answered more than `after` requests and is idle.
export function settle(page, after, timeout) {
  return page.waitForFunction(n => {
    const v = window.phosphorView
    return v.answered > n && (v.idle ? v.idle() : v.pending === 0)
  }, { timeout, polling: 20 }, after)
}

// Records each canvas's texts still on it: {text, x, y, width, color}, those whose point (in the
// units the context draws in) a clear took in dropped. Run in the page before it loads
// (`page.evaluateOnNewDocument(recordTexts)`), so that labels can be read back.
export function recordTexts() {
  const proto = CanvasRenderingContext2D.prototype
  const fill = proto.fillText
  const clear = proto.clearRect
  proto.fillText = function (text, x, y, ...rest) {
    const c = this.canvas
    c.texts = c.texts || []
    c.texts.push({ text: String(text), x, y, width: this.measureText(String(text)).width, color: String(this.fillStyle) })
    return fill.call(this, text, x, y, ...rest)
  }
  proto.clearRect = function (x, y, w, h) {
    const c = this.canvas
    if (x <= 0 && y <= 0 && x + w >= (c.cssWidth || c.width) && y + h >= (c.cssHeight || c.height)) c.texts = []
    else if (c.texts) c.texts = c.texts.filter(t => !(t.x >= x && t.x < x + w && t.y >= y && t.y < y + h))
    return clear.call(this, x, y, w, h)
  }
}

// Opens `url` of the viewer with canvas texts recorded, at `params.dpr` device pixels per CSS
// pixel (1 unless given), scrollbars shown as on a desktop (headless Chromium hides them), waits
// until it is ready and idle, then runs each of `params.checks` from `checks` (name → async
// function of the page) into `result[name]`; a check that throws goes among `result.errors`.
export async function runChecks(result, timeout, url, params, checks) {
  await check(result, timeout, async page => {
    await page.evaluateOnNewDocument(recordTexts)
    if (params.dpr && params.dpr !== 1) await page.setViewport({ width: 1600, height: 900, deviceScaleFactor: params.dpr })
    await page.goto(url, { timeout, waitUntil: 'domcontentloaded' })
    await page.waitForFunction(() => window.phosphorView && window.phosphorView.ready, { timeout, polling: 50 })
    await waitIdle(page, timeout)
    for (const name of params.checks) {
      try {
        result[name] = await checks[name](page)
      } catch (e) {
        result.errors.push(`${name}: ${e && e.message ? e.message : e}`)
      }
    }
  }, 1600, 900, { scrollbars: true })
}

// Scrolls the viewer's tracks from the top to the bottom a box's height at a time, waiting at each
// place until what is in sight is drawn (tracks out of sight are drawn only when they scroll in),
// then back to the top: every track's rows have been drawn at the view.
export async function seeAll(page, timeout) {
  for (let at = 0; ; ) {
    await page.evaluate(y => { document.getElementById('tracks').scrollTop = y }, at)
    await waitIdle(page, timeout)
    const { height, bottom } = await page.evaluate(() => {
      const root = document.getElementById('tracks')
      return { height: root.clientHeight, bottom: root.scrollHeight }
    })
    at += Math.max(1, height)
    if (at >= bottom) break
  }
  await page.evaluate(() => { document.getElementById('tracks').scrollTop = 0 })
  await waitIdle(page, timeout)
}
