// Loads a profile into speedscope's own built page (the npm package's dist/release) in headless
// Chromium, the way `speedscope FILE` does, and prints what happened as one JSON object:
//   {"loaded": bool, "title": "...", "errors": [...], "mis_nesting": N, "warnings": N, "examples": [...]}
// `mis_nesting` counts speedscope's "Tried to end X when Y was on the top of the stack" warnings
// (frames closed out of order: a file that does not nest as its importer rebuilds it).
//
// Usage: node speedscope-check.mjs PROFILE [TIMEOUT_SECONDS]
// Chromium: $CHROMIUM, else /usr/bin/chromium.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { launch } from './page.mjs'

const [profile, timeoutArg] = process.argv.slice(2)
if (!profile) {
  console.error('usage: node speedscope-check.mjs PROFILE [TIMEOUT_SECONDS]')
  process.exit(2)
}
const timeoutMs = 1000 * Number(timeoutArg || 120)
const require = createRequire(import.meta.url)
const index = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist/release/index.html')

// As the speedscope CLI does: a script that hands the file to the page, named in the URL's hash.
const name = path.basename(profile)
const script = path.join(os.tmpdir(), `phosphor-speedscope-${process.pid}.js`)
const base64 = fs.readFileSync(profile).toString('base64')
fs.writeFileSync(script, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(base64)})`)

const started = Date.now()
const result = { loaded: false, title: '', errors: [], mis_nesting: 0, warnings: 0, examples: [] }
// A CDP call (the wait below) may take as long as the import.
const browser = await launch(timeoutMs, ['--allow-file-access-from-files'])
try {
  const page = await browser.newPage()
  page.on('console', msg => {
    const text = msg.text()
    if (msg.type() === 'warn' || msg.type() === 'warning') {
      result.warnings += 1
      if (/Tried to end .* when .* was on the top of the stack/.test(text)) result.mis_nesting += 1
      if (result.examples.length < 5) result.examples.push(text)
    } else if (msg.type() === 'error') {
      result.errors.push(text)
    }
  })
  page.on('pageerror', e => result.errors.push(String(e && e.message ? e.message : e)))
  page.on('error', e => result.errors.push(`the page crashed: ${e && e.message ? e.message : e}`))
  await page.goto(`file://${index}#localProfilePath=${script}`, { timeout: timeoutMs, waitUntil: 'domcontentloaded' })
  // Loaded: the title names the file; failed: the error screen.
  await page.waitForFunction(
    n => document.title.includes(n) || document.body.innerText.includes('Something went wrong'),
    { timeout: timeoutMs, polling: 200 },
    name,
  )
  result.title = await page.title()
  const text = await page.evaluate(() => document.body.innerText)
  if (text.includes('Something went wrong')) result.errors.push('speedscope: Something went wrong')
  result.loaded = result.title.includes(name) && !text.includes('Something went wrong')
} catch (e) {
  result.errors.push(`${String(e && e.message ? e.message : e)} (after ${(Date.now() - started) / 1000} s)`)
} finally {
  await browser.close()
  fs.rmSync(script, { force: true })
}
result.seconds = (Date.now() - started) / 1000
console.log(JSON.stringify(result))
