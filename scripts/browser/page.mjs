// What the browser checks share: headless Chromium ($CHROMIUM, else Debian's /usr/bin/chromium)
// launched as the tests need it, and a page that records its console errors and uncaught
// exceptions in `errors`.
import puppeteer from 'puppeteer-core'

// Chromium, headless; a CDP call may take `timeoutMs` (a long import, a slow page).
export function launch(timeoutMs, extraArgs = []) {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    protocolTimeout: timeoutMs + 60000,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--enable-unsafe-swiftshader', ...extraArgs],
  })
}

// A new page of `width` × `height` whose console errors and exceptions go into `errors`.
export async function open(browser, errors, width = 1600, height = 900) {
  const page = await browser.newPage()
  await page.setViewport({ width, height })
  page.on('console', msg => {
    if (msg.type() === 'error') errors.push(msg.text())
  })
  page.on('pageerror', e => errors.push(String(e && e.message ? e.message : e)))
  return page
}

// Runs `body(page)` on a page of its own (`width` × `height`) in headless Chromium, then prints
// `result` as one JSON object: a failure of `body` goes among its `errors`, and Chromium is closed
// whatever happens.
export async function check(result, timeoutMs, body, width = 1600, height = 900) {
  const browser = await launch(timeoutMs)
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
