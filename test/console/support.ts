import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { expect } from "vitest"
import { CONSOLE_DIST } from "../../src/web/ConsoleAssets.js"

// Debian's package (.ci/run installs it when missing); playwright-core never downloads a browser
export const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => Fs.existsSync(p))
export const ARTIFACTS = Path.resolve(import.meta.dirname, "../../test-artifacts/console")
const ROOT = Path.resolve(import.meta.dirname, "../..")

/**
 * The built console, as `npm install` (prepare) leaves it. Built here when missing or older than its sources
 * (a checkout where someone edited console/ since the last install), so the tests see the sources' console.
 */
export const ensureConsoleBuilt = () => {
  const newest = (dir: string): number =>
    Fs.readdirSync(dir, { withFileTypes: true }).reduce((m, e) => {
      const p = Path.join(dir, e.name)
      return Math.max(m, e.isDirectory() ? newest(p) : Fs.statSync(p).mtimeMs)
    }, 0)
  const index = Path.join(CONSOLE_DIST, "index.html")
  const sources = Math.max(
    newest(Path.join(ROOT, "console/src")),
    Fs.statSync(Path.join(ROOT, "console/index.html")).mtimeMs
  )
  if (Fs.existsSync(index) && Fs.statSync(index).mtimeMs >= sources) return
  // test files run in parallel workers: one builds, the others wait for it
  const lock = Path.join(Os.tmpdir(), `switchyard-console-build-${Buffer.from(ROOT).toString("hex").slice(-32)}.lock`)
  try {
    Fs.mkdirSync(lock, { recursive: false })
  } catch {
    const until = Date.now() + 120_000
    while (Fs.existsSync(lock) && Date.now() < until) execFileSync("sleep", ["0.5"])
    return
  }
  try {
    build()
  } finally {
    Fs.rmSync(lock, { recursive: true, force: true })
  }
}

const build = () => {
  // NODE_ENV=production: under vitest (NODE_ENV=test) Vite would bundle the development build of React
  execFileSync("npm", ["run", "build:console"], {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, NODE_ENV: "production" }
  })
}

export const launch = () => chromium.launch({ executablePath: CHROMIUM!, headless: true, args: ["--no-sandbox"] })

/** A new browser window (its own cookies) at one of the two widths the console is checked at. */
export const windowOf = (browser: Browser, width: 1280 | 390 = 1280) =>
  browser.newContext({ viewport: { width, height: width === 390 ? 844 : 900 }, acceptDownloads: true })

export const signInAs = async (context: BrowserContext, baseUrl: string, email: string, password: string) => {
  const page = await context.newPage()
  await page.goto(`${baseUrl}/console/`)
  await page.getByLabel("Email").fill(email)
  await page.getByLabel("Password").fill(password)
  await page.getByRole("button", { name: "Sign in", exact: true }).click()
  // (at 390 px the navigation is folded behind the Menu button)
  await page.getByRole("button", { name: "Sign out" }).waitFor()
  return page
}

const AXE = Fs.readFileSync(Path.join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8")

/**
 * axe-core in the page (evaluated through the DevTools protocol, which the page's CSP does not govern):
 * no serious or critical violation.
 */
export const expectAccessible = async (page: Page, what: string) => {
  await page.evaluate(AXE)
  const violations = await page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ["violations"] })
    return result.violations
      .filter((v: any) => v.impact === "serious" || v.impact === "critical")
      .map((v: any) => ({
        id: v.id,
        impact: v.impact,
        help: v.help,
        nodes: v.nodes.map((n: any) => n.html).slice(0, 3)
      }))
  })
  expect(violations, `${what}: axe-core violations`).toEqual([])
}

/** A full-page screenshot into test-artifacts/console/NAME.png. */
export const screenshot = async (page: Page, name: string) => {
  Fs.mkdirSync(ARTIFACTS, { recursive: true })
  await page.screenshot({ path: Path.join(ARTIFACTS, `${name}.png`), fullPage: true })
}

/** Nothing on the page is wider than the window (wide tables scroll inside their own box). */
export const expectNoSideways = async (page: Page, what: string) => {
  const sideways = await page.evaluate(() => ({
    by: document.documentElement.scrollWidth - window.innerWidth,
    wider: Array.from(document.querySelectorAll("body *"))
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
      .map((e) => e.outerHTML.slice(0, 80))
  }))
  expect(sideways.by, `${what} scrolls sideways: ${sideways.wider.join("\n")}`).toBeLessThanOrEqual(0)
}

/** An OpenAPI document of one `GET /me` behind an OAuth2 authorization-code flow at `provider`. */
export const oauthSpec = (
  title: string,
  provider: { readonly url: string; readonly authorizationUrl: string; readonly tokenUrl: string }
) => ({
  openapi: "3.0.3",
  info: { title, version: "1" },
  servers: [{ url: `${provider.url}/api` }],
  security: [{ oauth: ["read"] }],
  components: {
    securitySchemes: {
      oauth: {
        type: "oauth2",
        flows: {
          authorizationCode: {
            authorizationUrl: provider.authorizationUrl,
            tokenUrl: provider.tokenUrl,
            scopes: { read: "Read" }
          }
        }
      }
    }
  },
  paths: { "/me": { get: { operationId: "me", responses: { "200": { description: "ok" } } } } }
})
