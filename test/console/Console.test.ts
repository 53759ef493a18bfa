import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call } from "../access/support.js"
import { petstore } from "../connectors/support.js"
import { PASSWORD, setPassword, signedUpAdmin } from "../mcp/support.js"
import { parseCsv } from "../support/Csv.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { type OAuthServer, startOAuthServer } from "../support/OAuthServer.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import {
  CHROMIUM,
  ensureConsoleBuilt,
  expectAccessible,
  expectNoSideways,
  launch,
  oauthSpec,
  screenshot,
  signInAs,
  windowOf
} from "./support.js"

let node: TestNode
let target: TargetServer
let model: ModelServer
let provider: OAuthServer
const oauthClient = { id: "console-test", secret: "console-secret" }
let browser: Browser
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
let member: Awaited<ReturnType<typeof addMember>>
let adminPage: Page
/** What the journeys made, for the page tour at the end. */
const made: { connectorId?: string; agentId?: string; taskId?: string } = {}

beforeAll(async () => {
  if (CHROMIUM === undefined) return
  ensureConsoleBuilt()
  model = await startModelServer("openai")
  target = await startTargetServer()
  provider = await startOAuthServer(oauthClient)
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_OPENAI_BASE_URL: model.url,
    SWITCHYARD_OPENAI_API_KEY: "sk-test"
  })
  admin = await signedUpAdmin(node, "Console Org")
  member = await addMember(node, admin.api_key, "member")
  await setPassword(node, member.email, PASSWORD)
  browser = await launch()
  adminPage = await signInAs(await windowOf(browser), node.baseUrl, admin.email, PASSWORD)
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await node?.stop()
  await target?.close()
  await model?.close()
  await provider?.close()
})

const go = async (page: Page, path: string) => {
  await page.goto(`${node.baseUrl}/console${path}`)
  await page.getByRole("button", { name: "Sign out" }).waitFor()
}

describe.skipIf(CHROMIUM === undefined)("the web console in a real browser (headless Chromium)", () => {
  it("signs in with the labelled form, creates an API key shown once, and the key works with the API", async () => {
    const context = await windowOf(browser)
    const page = await context.newPage()
    await page.goto(`${node.baseUrl}/console/`)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await expect(page.getByText("Enter the e-mail address you sign in with.")).toBeTruthy()
    await page.getByText("Enter your password.").waitFor() // validated before anything is sent
    await page.getByLabel("Email").fill(admin.email)
    await page.getByLabel("Password").fill("wrong password")
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("alert").filter({ hasText: "Wrong e-mail or password." }).waitFor()
    await expectAccessible(page, "sign-in")
    await screenshot(page, "sign-in")
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("heading", { name: "Overview" }).waitFor()

    await page.getByRole("link", { name: "Settings" }).click()
    await page.getByRole("heading", { name: "API keys", level: 2 }).waitFor()
    await page.getByRole("button", { name: "Create key" }).click()
    await page.getByText("Name the key after where it is used").waitFor()
    await page.getByLabel("Key name").fill("console-test")
    await page.getByRole("button", { name: "Create key" }).click()
    const secret = (await page.getByTestId("secret").textContent())!.trim()
    expect(secret).toMatch(/^sy_[a-z0-9]{12}_/)
    await page.getByRole("cell", { name: "console-test", exact: true }).waitFor()
    await screenshot(page, "settings-api-keys")

    // the key, as a script would use it
    const me = await fetch(`${node.baseUrl}/v1/me`, { headers: { "x-api-key": secret } })
    expect(me.status).toBe(200)
    expect((await me.json()).user.email).toBe(admin.email)
    // shown once: a reload lists the key but never its secret
    await page.reload()
    await page.getByRole("cell", { name: "console-test", exact: true }).waitFor()
    expect(await page.getByTestId("secret").count()).toBe(0)
    await context.close()
  })

  it("adds a connector from an OpenAPI upload (import report), connects it and tries an operation upstream", async () => {
    const page = adminPage
    await go(page, "/connectors")
    await page.getByRole("button", { name: "Add connector" }).click()
    await page.getByRole("button", { name: "Import" }).click()
    await page.getByText("Upload or paste an OpenAPI 3 document").waitFor()
    const spec = petstore(target.url) as any
    spec.paths["/legacy"] = { trace: { operationId: "traceIt", responses: { "200": { description: "ok" } } } }
    await page.getByLabel("OpenAPI file").setInputFiles({
      name: "petstore.json",
      mimeType: "application/json",
      buffer: Buffer.from(JSON.stringify(spec))
    })
    await page.getByRole("button", { name: "Import" }).click()
    await page.getByRole("heading", { name: "Import report" }).waitFor()
    const report = await page.getByRole("status").filter({ hasText: "Imported" }).textContent()
    expect(report).toMatch(/Imported Pet Store: \d+ operations/)
    await page.getByRole("link", { name: "Pet Store" }).first().click()
    await page.getByRole("heading", { name: "Pet Store", level: 1 }).waitFor()
    made.connectorId = new URL(page.url()).pathname.split("/").at(-1)!

    await page.getByRole("button", { name: "New connection" }).click()
    await page.getByRole("button", { name: "Connect", exact: true }).click()
    await page.getByText("Name the connection").waitFor()
    await page.getByLabel("Connection name").fill("pets")
    await page.getByLabel("Credential type").selectOption("api_key")
    await page.getByLabel("API key").fill("secret-upstream-key")
    await page.getByRole("button", { name: "Connect", exact: true }).click()
    await page.getByRole("button", { name: "Delete connection pets" }).waitFor()

    await page.getByRole("heading", { name: "Try an operation" }).waitFor()
    await page.getByLabel("Operation", { exact: true }).selectOption("listPets")
    await page.getByLabel(/^limit/).fill("500")
    await page.getByRole("button", { name: "Call operation" }).click()
    await page.getByText("At most 100.").waitFor() // the input schema's maximum, checked before sending
    await page.getByLabel(/^limit/).fill("7")
    const before = target.requests.length
    await page.getByRole("button", { name: "Call operation" }).click()
    await page.getByText("The API answered with HTTP 200").waitFor()
    const sent = target.requests.slice(before)
    expect(sent).toHaveLength(1)
    expect(sent[0]!.path).toBe("/pets")
    expect(sent[0]!.query.get("limit")).toBe("7")
    expect(sent[0]!.headers["x-api-key"]).toBe("secret-upstream-key")
    // the upstream's answer as it sent it (this one echoes the request it got)
    expect(await page.getByRole("status", { name: "Operation result" }).textContent()).toContain("\"path\": \"/pets\"")
    await screenshot(page, "connector")
  })

  it("connects with OAuth2: the console sends the browser to the provider's consent, back to the console, and the connection works", async () => {
    const connector = (await call(node, admin.api_key, "POST", "/v1/tools/connectors", {
      spec: oauthSpec("OAuth API", provider)
    })).body
    const page = adminPage
    await go(page, `/connectors/${connector.id}`)
    await page.getByRole("button", { name: "New connection" }).click()
    await page.getByLabel("Connection name").fill("mine")
    await page.getByLabel("Credential type").selectOption("oauth2")
    await page.getByRole("button", { name: "Connect and authorize" }).click()
    await page.getByText("Client ID is required.").waitFor()
    await page.getByLabel("Client ID").fill(oauthClient.id)
    await page.getByLabel("Client secret").fill(oauthClient.secret)
    await page.getByRole("button", { name: "Connect and authorize" }).click()
    // the provider approves at once and sends the browser back through the node's callback to the console
    await page.waitForURL((u) =>
      u.pathname === `/console/connectors/${connector.id}` && u.searchParams.get("oauth") === "connected"
    )
    await page.getByRole("status").filter({ hasText: "Back from the provider's consent" }).waitFor()
    await page.getByRole("listitem").filter({ hasText: "mine" }).getByText("active").waitFor()
    await page.getByRole("button", { name: "Call operation" }).click()
    await page.getByText("The API answered with HTTP 200").waitFor()
    expect(provider.tokenRequests.some((r) => r.grant_type === "authorization_code")).toBe(true)
  })

  it("creates an agent with a tool, chats with it in Try it and sees the tool call and model calls in the thread", async () => {
    const page = adminPage
    model.script.push(
      {
        tool_calls: [{ name: "listPets", arguments: { query_params: { limit: 2 } } }],
        usage: { input: 90, output: 15 }
      },
      { text: "There are two pets.", usage: { input: 130, output: 8 } }
    )
    await go(page, "/agents")
    await page.getByRole("button", { name: "New agent" }).click()
    await page.getByRole("button", { name: "Create agent" }).click()
    await page.getByText("Give the agent a name.").waitFor()
    await page.getByLabel("Name", { exact: true }).fill("Pet helper")
    await page.getByLabel("Instructions").fill("Answer questions about pets.")
    await page.getByLabel("Model provider").selectOption("openai")
    await page.getByLabel("Model", { exact: true }).fill("gpt-4.1-mini")
    await page.getByRole("checkbox", { name: /listPets|List pets/ }).check()
    await page.getByRole("button", { name: "Create agent" }).click()
    await page.getByRole("heading", { name: "Pet helper", level: 1 }).waitFor()
    made.agentId = new URL(page.url()).pathname.split("/").at(-1)!

    await page.getByLabel("Message").fill("How many pets are there?")
    // the thread follows the task's event stream (with the session cookie, as a plain EventSource)
    const streamed = page.waitForRequest((r) => /\/v1\/tasks\/[0-9a-f-]+\/events$/.test(r.url()))
    await page.getByRole("button", { name: "Send" }).click()
    await streamed
    const thread = page.getByRole("list", { name: "Thread" })
    await thread.getByText("There are two pets.", { exact: true }).waitFor({ timeout: 20_000 })
    const text = await thread.textContent()
    expect(text).toContain("How many pets are there?")
    expect(text).toMatch(/Tool call listPets/)
    expect(text).toContain("\"limit\": 2")
    expect(target.requests.at(-1)!.query.get("limit")).toBe("2")
    await screenshot(page, "agent-try-it")

    await page.getByRole("main").getByRole("link", { name: /^[0-9a-f]{8}$/ }).first().click()
    await page.getByRole("heading", { name: "Model calls" }).waitFor()
    made.taskId = new URL(page.url()).pathname.split("/").at(-1)!
    await page.getByRole("cell", { name: "220" }).waitFor() // 90 + 130 input tokens
    await page.getByText(/^Model call · .+ · 90 in, 15 out · \$/).waitFor()
    await screenshot(page, "task")
  })

  it("approves a pending tool call from the Approvals inbox and the task goes on", async () => {
    const key = admin.api_key
    const connectorConnections = (await call(node, key, "GET", `/v1/tools/connectors/${made.connectorId}`)).body
    const connectionId = connectorConnections.connections[0].id
    const agent = (await call(node, key, "POST", "/v1/agents", {
      name: "Careful",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "42" } } }] }, { text: "done" }]
      }
    })).body
    const skill = (await call(node, key, "POST", "/v1/skills", {
      name: "Guarded pets",
      visibility: "organization",
      actions: [{ connection_id: connectionId, operation_id: "getPet", requires_approval: true }]
    })).body
    expect((await call(node, key, "POST", `/v1/skills/${skill.id}/publish`)).status).toBe(200)
    expect((await call(node, key, "PUT", `/v1/agents/${agent.id}/skills/${skill.id}`)).status).toBe(200)
    const task = (await call(node, key, "POST", `/v1/agents/${agent.id}/invoke?asynchronous=true`, {
      input: { text: "get 42", user: { id: "u", email: "u@example.com" } }
    })).body
    const statusOf = async () => (await call(node, key, "GET", `/v1/tasks/${task.id}`)).body.status
    for (let i = 0; i < 200 && (await statusOf()) !== "waiting_approval"; i++) {
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(await statusOf()).toBe("waiting_approval")

    const page = adminPage
    await go(page, "/approvals")
    const card = page.getByRole("article", { name: "Approval of getPet" })
    await card.waitFor()
    expect(await card.textContent()).toContain("\"petId\": \"42\"")
    await screenshot(page, "approvals")
    await card.getByRole("button", { name: "Approve" }).click()
    await page.getByText("Nothing waits for approval.").waitFor()
    for (let i = 0; i < 200 && (await statusOf()) !== "completed"; i++) await new Promise((r) => setTimeout(r, 50))
    expect(await statusOf()).toBe("completed")
    expect(target.requests.some((r) => r.path === "/pets/42")).toBe(true)
  })

  it("exports the audit log as CSV, which parses with a header and the journeys' events", async () => {
    const page = adminPage
    await go(page, "/audit-log")
    await page.getByRole("cell", { name: "CREATE_API_KEY" }).first().waitFor()
    await screenshot(page, "audit-log")
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export CSV" }).click()
    ])
    expect(download.suggestedFilename()).toBe("audit-log.csv")
    const rows = parseCsv(Fs.readFileSync((await download.path())!, "utf8"))
    const header = rows[0]!
    expect(header).toContain("action")
    const action = header.indexOf("action")
    const actions = rows.slice(1).map((r) => r[action])
    for (const a of ["CREATE_API_KEY", "CREATE_CONNECTOR", "CREATE_AGENT"]) expect(actions).toContain(a)
    expect(rows.slice(1).every((r) => r.length === header.length)).toBe(true)

    // the filters go to the API: only the asked type
    await page.getByLabel("Event type").fill("create_agent")
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(/event_type=CREATE_AGENT/)
    const [filtered] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export JSON" }).click()
    ])
    const events = JSON.parse(Fs.readFileSync((await filtered.path())!, "utf8"))
    expect(events.length).toBeGreaterThan(0)
    expect(new Set(events.map((e: any) => e.action))).toEqual(new Set(["CREATE_AGENT"]))
  })

  it("uploads a workspace file, and schedules the agent and runs the schedule now", async () => {
    const page = adminPage
    await go(page, "/files")
    await page.getByText("No files here.").waitFor()
    await page.getByLabel("File", { exact: true }).setInputFiles({
      name: "brief.txt",
      mimeType: "text/plain",
      buffer: Buffer.from("Be brief.")
    })
    await page.getByLabel("Name in the workspace").fill("shared/brief.txt")
    await page.getByRole("button", { name: "Upload" }).click()
    await page.getByRole("link", { name: "shared/brief.txt" }).waitFor()
    const files = (await call(node, admin.api_key, "GET", "/v1/files")).body.items
    expect(files.map((f: any) => [f.name, f.size])).toEqual([["shared/brief.txt", 9]])

    model.script.push({ text: "Scheduled hello." })
    await go(page, "/schedules")
    await page.getByRole("button", { name: "New schedule" }).click()
    await page.getByRole("button", { name: "Create schedule" }).click()
    await page.getByText("Name the schedule.").waitFor()
    await page.getByLabel("Schedule name").fill("Hourly check")
    await page.getByLabel("Agent").selectOption({ label: "Pet helper" })
    await page.getByLabel("Repeat by").selectOption("every")
    await page.getByLabel("Every").fill("1h")
    await page.getByLabel("Message").fill("Check the pets.")
    await page.getByRole("button", { name: "Create schedule" }).click()
    await page.getByRole("heading", { name: /Hourly check/ }).waitFor()
    await page.getByRole("button", { name: "Run now" }).click()
    await page.getByRole("heading", { name: /^Task / }).waitFor()
    await page.getByRole("list", { name: "Thread" }).getByText("Check the pets.", { exact: true }).waitFor()
  })

  it("a Member sees no Admin pages, and the API refuses them when the browser is made to ask", async () => {
    const context = await windowOf(browser, 390)
    const page = await signInAs(context, node.baseUrl, member.email, PASSWORD)
    const nav = page.getByRole("navigation", { name: "Main" })
    // at 390 px the navigation folds behind the Menu button
    await page.getByRole("button", { name: "Menu" }).click()
    const links = await nav.getByRole("link").allTextContents()
    expect(links).toEqual([
      "Overview",
      "Agents",
      "Tasks",
      "Connectors",
      "Skills",
      "Schedules",
      "Files",
      "Knowledge bases",
      "Functions",
      "Settings"
    ])
    await nav.getByRole("link", { name: "Settings" }).click()
    await page.getByRole("heading", { name: "API keys", level: 2 }).waitFor()
    const settings = await page.getByRole("navigation", { name: "Settings" }).getByRole("link").allTextContents()
    expect(settings).toEqual(["API keys", "MCP authorizations"])
    expect(await page.getByRole("button", { name: "New agent" }).count()).toBe(0)
    await screenshot(page, "member-settings-390")

    await go(page, "/audit-log")
    await page.getByRole("heading", { name: "Not available to your role" }).waitFor()
    await go(page, "/settings/members")
    await page.getByText("This settings page is for Admins.").waitFor()
    // forced: the API itself refuses the Member, with the session's role
    const forced = await page.evaluate(async () => {
      const session = await (await fetch("/console/api/session")).json()
      const audit = await fetch("/v1/audit-logs")
      const members = await fetch("/v1/members", {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": session.csrf_token },
        body: JSON.stringify({ email: "intruder@example.com", role: "admin" })
      })
      return { audit: audit.status, members: members.status, code: (await members.json()).error.code }
    })
    expect(forced).toEqual({ audit: 403, members: 403, code: "forbidden" })
    await context.close()
  })

  it("refuses a cross-site POST that carries the session cookie but no CSRF header (a page on another port)", async () => {
    // 127.0.0.1 on another port is the same site (so SameSite lets the cookie go) but another origin
    const evil = Http.createServer((_, res) => {
      res.writeHead(200, { "content-type": "text/html" })
      res.end(`<!doctype html><title>evil</title><script>
        fetch(${JSON.stringify(`${node.baseUrl}/v1/agents`)}, { method: "POST", credentials: "include",
          headers: { "content-type": "text/plain" },
          body: JSON.stringify({ name: "Planted", model: { provider: "scripted", script: [{ text: "x" }] } })
        }).then(() => document.title = "sent", () => document.title = "sent")
      </script>`)
    })
    await new Promise<void>((resolve) => evil.listen(0, "127.0.0.1", resolve))
    try {
      const sent = new Promise<void>((resolve) => node.baseUrl && resolve())
      await sent
      const page = await adminPage.context().newPage()
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`)
      await page.waitForFunction(() => document.title === "sent")
      await page.close()
      const agents = (await call(node, admin.api_key, "GET", "/v1/agents")).body.items
      expect(agents.map((a: any) => a.name)).not.toContain("Planted")
      const refused = (await call(node, admin.api_key, "GET", "/v1/audit-logs?event_type=CREATE_AGENT")).body.items
      expect(refused.every((e: any) => e.targets.every((t: any) => t.name !== "Planted"))).toBe(true)
    } finally {
      evil.close()
    }
  })

  it(
    "every page passes axe-core (no serious or critical violation) at 1280 and 390 px, with a screenshot",
    async () => {
      const pages: Array<[string, string]> = [
        ["overview", "/"],
        ["agents", "/agents"],
        ["agent", `/agents/${made.agentId}`],
        ["tasks", "/tasks"],
        ["task", `/tasks/${made.taskId}`],
        ["connectors", "/connectors"],
        ["connector", `/connectors/${made.connectorId}`],
        ["skills", "/skills"],
        ["schedules", "/schedules"],
        ["files", "/files"],
        ["approvals", "/approvals"],
        ["webhooks", "/webhooks"],
        ["audit-log", "/audit-log"],
        ["settings-api-keys", "/settings/api-keys"],
        ["settings-members", "/settings/members"],
        ["settings-groups", "/settings/groups"],
        ["settings-sso", "/settings/sso"],
        ["settings-model-providers", "/settings/model-providers"],
        ["settings-mcp", "/settings/mcp"]
      ]
      for (const width of [1280, 390] as const) {
        const context = await windowOf(browser, width)
        const page = await signInAs(context, node.baseUrl, admin.email, PASSWORD)
        for (const [name, path] of pages) {
          await go(page, path)
          // checked every frame: a locator's wait backs off to half a second between tries, most of this test's time
          await page.waitForFunction(() =>
            document.querySelector("h1") !== null &&
            document.querySelector("[role=status]")?.textContent !== "Loading…"
          ).catch((e) => {
            throw new Error(`${name} at ${width}px: no heading, or still loading: ${e}`)
          })
          await expectAccessible(page, `${name} at ${width}px`)
          await screenshot(page, `${name}-${width}`)
          await expectNoSideways(page, `${name} at ${width}px`)
        }
        await context.close()
      }
    },
    180_000
  )

  it("works by keyboard: skip link, navigation links and form submission with Enter", async () => {
    const context = await windowOf(browser)
    const page = await signInAs(context, node.baseUrl, admin.email, PASSWORD)
    await page.keyboard.press("Tab")
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content")
    // to the Agents link and follow it with Enter
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press("Tab")
      if ((await page.evaluate(() => document.activeElement?.textContent)) === "Agents") break
    }
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { name: "Agents", level: 1 }).waitFor()
    expect(new URL(page.url()).pathname).toBe("/console/agents")
    await go(page, "/settings/api-keys")
    await page.getByLabel("Key name").focus()
    await page.keyboard.type("typed-by-keyboard")
    await page.keyboard.press("Enter")
    await page.getByTestId("secret").waitFor()
    await context.close()
  })
})
