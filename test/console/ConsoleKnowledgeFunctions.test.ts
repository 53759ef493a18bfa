import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call } from "../access/support.js"
import { PASSWORD, setPassword, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import {
  CHROMIUM,
  ensureConsoleBuilt,
  expectAccessible,
  expectNoSideways,
  launch,
  screenshot,
  signInAs,
  windowOf
} from "./support.js"

let node: TestNode
let browser: Browser
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
let member: Awaited<ReturnType<typeof addMember>>
let adminPage: Page
/** A web page the knowledge base fetches by URL (the egress guard allows 127.0.0.1 here). */
let site: Http.Server
let siteUrl: string
const made: { baseId?: string; functionId?: string; agentId?: string } = {}

beforeAll(async () => {
  if (CHROMIUM === undefined) return
  ensureConsoleBuilt()
  site = Http.createServer((_, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    res.end(`<!doctype html><title>Travel</title><h1>Travel policy</h1><p>Trains are booked in second class.</p>`)
  })
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve))
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/travel.html`
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  admin = await signedUpAdmin(node, "Knowledge Org")
  member = await addMember(node, admin.api_key, "member")
  await setPassword(node, member.email, PASSWORD)
  browser = await launch()
  adminPage = await signInAs(await windowOf(browser), node.baseUrl, admin.email, PASSWORD)
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await node?.stop()
  site?.close()
})

const go = async (page: Page, path: string) => {
  await page.goto(`${node.baseUrl}/console${path}`)
  await page.getByRole("button", { name: "Sign out" }).waitFor()
}

/** The row of a document in the documents table. */
const documentRow = (page: Page, name: string) => page.getByRole("row").filter({ hasText: name })

describe.skipIf(CHROMIUM === undefined)("knowledge bases and functions in the console (headless Chromium)", () => {
  it("creates a knowledge base, adds a text document, sees it become ready and searches it", async () => {
    const page = adminPage
    await go(page, "/")
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Knowledge bases" }).click()
    await page.getByRole("heading", { name: "Knowledge bases", level: 1 }).waitFor()
    await page.getByText("No knowledge bases yet.").waitFor() // the empty state says what to do
    await page.getByText(/attach it to an agent/).waitFor()
    await expectAccessible(page, "knowledge bases, empty")
    await screenshot(page, "knowledge-bases-empty")

    await page.getByRole("button", { name: "New knowledge base" }).click()
    await page.getByLabel("Language").fill("English!")
    await page.getByRole("button", { name: "Create knowledge base" }).click()
    await page.getByText("Name the knowledge base.").waitFor() // checked before anything is sent
    await page.getByText(/A text search language in lower case/).waitFor()
    await page.getByLabel("Knowledge base name").fill("Handbook")
    await page.getByLabel("Description").fill("The staff handbook.")
    await page.getByLabel("Language").fill("klingon")
    await page.getByRole("button", { name: "Create knowledge base" }).click()
    // the API's own message and code
    await page.getByRole("alert").filter({ hasText: "invalid_language" }).waitFor()
    await page.getByLabel("Language").fill("english")
    await page.getByRole("button", { name: "Create knowledge base" }).click()
    await page.getByRole("heading", { name: "Handbook", level: 1 }).waitFor()
    made.baseId = new URL(page.url()).pathname.split("/").at(-1)!
    await page.getByText("No documents yet.").waitFor()

    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByText("Name the document, e.g. handbook/leave.md.").waitFor()
    await page.getByText("Paste the document's text.").waitFor()
    await page.getByLabel("Document name").fill("leave.md")
    await page.getByLabel("Document text").fill(
      "# Leave\n\nEvery employee gets thirty days of vacation a year.\n\n## Sick leave\n\nTell your manager."
    )
    await page.getByRole("button", { name: "Add document" }).click()
    await documentRow(page, "leave.md").getByText("ready", { exact: true }).waitFor({ timeout: 30_000 })
    expect(await documentRow(page, "leave.md").textContent()).toContain("text")

    await page.getByRole("button", { name: "Search", exact: true }).click()
    await page.getByText("Type words to search for.").waitFor()
    await page.getByLabel("Search the documents").fill("vacation days")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    const results = page.getByRole("list", { name: "Search results" })
    await results.getByText("leave.md").waitFor()
    expect(await results.locator("mark").first().textContent()).toMatch(/vacation|days/i)
    expect(await results.textContent()).toContain("Leave")
    await screenshot(page, "knowledge-base-search")
    await page.getByLabel("Search the documents").fill("submarine")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await page.getByText("Nothing found.").waitFor()
    await expectAccessible(page, "knowledge base")
    await screenshot(page, "knowledge-base")
  })

  it("adds documents from a workspace file and from a URL, and shows a failed one's error", async () => {
    const page = adminPage
    const uploaded = await node.fetch("/v1/files?name=notes/expenses.md", {
      method: "POST",
      apiKey: admin.api_key,
      headers: { "content-type": "text/markdown" },
      body: "# Expenses\n\nReceipts are kept for seven years."
    })
    expect(uploaded.status).toBe(201)
    await go(page, `/knowledge-bases/${made.baseId}`)
    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByLabel("Workspace file").check()
    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByText("Choose a workspace file").waitFor()
    await page.getByLabel("File", { exact: true }).selectOption({ label: "notes/expenses.md" })
    await page.getByRole("button", { name: "Add document" }).click()
    // named after the file when no name is given
    await documentRow(page, "notes/expenses.md").getByText("ready", { exact: true }).waitFor({ timeout: 30_000 })

    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByLabel("Web address (URL)").check()
    await page.getByLabel("Document name").fill("travel.html")
    await page.getByLabel("Document URL").fill("not a url")
    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByText("An http or https address").waitFor()
    await page.getByLabel("Document URL").fill(siteUrl)
    await page.getByRole("button", { name: "Add document" }).click()
    await documentRow(page, "travel.html").getByText("ready", { exact: true }).waitFor({ timeout: 30_000 })

    // a document that cannot be read shows its status and the reason
    await page.getByRole("button", { name: "Add document" }).click()
    await page.getByLabel("Document name").fill("empty.html")
    await page.getByLabel("Document text").fill("<!doctype html><html><body><script>nothing()</script></body></html>")
    await page.getByLabel("Format").selectOption("html")
    await page.getByRole("button", { name: "Add document" }).click()
    await documentRow(page, "empty.html").getByText("error", { exact: true }).waitFor({ timeout: 30_000 })
    expect(await documentRow(page, "empty.html").textContent()).toContain("(no_text)")

    await page.getByLabel("Search the documents").fill("second class trains")
    await page.getByRole("button", { name: "Search", exact: true }).click()
    await page.getByRole("list", { name: "Search results" }).getByText("travel.html").waitFor()

    page.once("dialog", (d) => d.accept())
    await page.getByRole("button", { name: "Delete document empty.html" }).click()
    await documentRow(page, "empty.html").waitFor({ state: "detached" })
    const docs = await call(node, admin.api_key, "GET", `/v1/knowledge-bases/${made.baseId}/documents`)
    expect(docs.body.items.map((d: any) => d.name).sort()).toEqual(["leave.md", "notes/expenses.md", "travel.html"])
  })

  it("creates a function, invokes it from the form made from its input schema, and sees output, logs, duration", async () => {
    const page = adminPage
    await go(page, "/")
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Functions" }).click()
    await page.getByRole("heading", { name: "Functions", level: 1 }).waitFor()
    await page.getByText("No functions yet.").waitFor()
    await expectAccessible(page, "functions, empty")
    await screenshot(page, "functions-empty")

    await page.getByRole("button", { name: "New function" }).click()
    await page.getByLabel("Function name").fill("9 bad name")
    await page.getByLabel("Input schema").fill("{ not json")
    await page.getByLabel("Timeout (ms)").fill("60000")
    await page.getByRole("button", { name: "Create function" }).click()
    await page.getByText(/^1-64 letters, digits/).waitFor()
    await page.getByText(/^Not valid JSON/).waitFor()
    await page.getByText("Between 1 and 30000.").waitFor()
    await page.getByLabel("Function name").fill("greet")
    await page.getByLabel("Description").fill("Greets someone a number of times.")
    await page.getByLabel("Input schema").fill(JSON.stringify({
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string", description: "Who to greet" },
        times: { type: "integer", minimum: 1, maximum: 3 }
      }
    }))
    await page.getByLabel("Code").fill(
      "export default async (input, ctx) => {\n  ctx.log(\"greeting\", input.name)\n" +
        "  return { greeting: Array(input.times ?? 1).fill(`Hello, ${input.name}!`).join(\" \") }\n}\n"
    )
    await page.getByLabel("Timeout (ms)").fill("2000")
    await page.getByRole("button", { name: "Create function" }).click()
    await page.getByRole("heading", { name: "greet", level: 1 }).waitFor()
    made.functionId = new URL(page.url()).pathname.split("/").at(-1)!

    await page.getByRole("button", { name: "Invoke" }).click()
    await page.getByText("Required.").waitFor() // the input schema, checked before sending
    await page.getByLabel(/^name/).fill("Ada")
    await page.getByLabel(/^times/).fill("7")
    await page.getByRole("button", { name: "Invoke" }).click()
    await page.getByText("At most 3.").waitFor()
    await page.getByLabel(/^times/).fill("2")
    await page.getByRole("button", { name: "Invoke" }).click()
    const result = page.getByRole("status", { name: "Invocation result" })
    await result.waitFor()
    expect(await result.textContent()).toContain("Hello, Ada! Hello, Ada!")
    expect(await result.textContent()).toContain("greeting Ada") // its log line
    expect(await result.textContent()).toMatch(/Ran version 1 in \d+(\.\d)? ms/)
    await expectAccessible(page, "function")
    await screenshot(page, "function")
  })

  it("edits a function into a new version, shows the API's error when it throws, and opens a past version", async () => {
    const page = adminPage
    await go(page, `/functions/${made.functionId}`)
    await page.getByRole("button", { name: "Edit" }).click()
    await page.getByLabel("Code").fill(
      "export default async (input, ctx) => {\n  ctx.log(\"about to fail\")\n  throw new Error(\"no greeting today\")\n}\n"
    )
    await page.getByRole("button", { name: "Save as a new version" }).click()
    await page.getByText(/version 2 \(current\)/).waitFor()
    await page.getByLabel(/^name/).fill("Ada")
    await page.getByRole("button", { name: "Invoke" }).click()
    const alert = page.getByRole("alert").filter({ hasText: "no greeting today" })
    await alert.waitFor()
    expect(await alert.textContent()).toContain("function_error")
    await page.getByRole("group", { name: "Error details" }).getByText("about to fail").waitFor()

    const versions = page.getByRole("region", { name: "Versions" })
    await versions.getByRole("link", { name: "Version 1" }).click()
    await page.getByText("You are looking at version 1").waitFor()
    await page.getByLabel(/^name/).fill("Grace")
    await page.getByRole("button", { name: "Invoke" }).click()
    const result = page.getByRole("status", { name: "Invocation result" })
    expect(await result.textContent()).toContain("Hello, Grace!")
    expect(await result.textContent()).toContain("Ran version 1")
  })

  it("attaches the knowledge base and the function to an agent from the agent's page", async () => {
    const agent = await call(node, admin.api_key, "POST", "/v1/agents", {
      name: "Helper",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })
    expect(agent.status).toBe(201)
    made.agentId = agent.body.id
    const page = adminPage
    await go(page, `/agents/${made.agentId}`)
    await page.getByRole("heading", { name: "Skills, knowledge and functions" }).waitFor()
    await page.getByText("No skills, knowledge bases or functions").waitFor()
    await page.getByLabel("Knowledge base to attach").selectOption({ label: "Handbook" })
    await page.getByRole("button", { name: "Attach knowledge base" }).click()
    await page.getByRole("listitem").filter({ hasText: "Knowledge base Handbook" }).waitFor()
    await page.getByLabel("Function to attach").selectOption({ label: "greet" })
    await page.getByRole("button", { name: "Attach function" }).click()
    await page.getByRole("listitem").filter({ hasText: "Function greet" }).waitFor()
    const functions = await call(node, admin.api_key, "GET", `/v1/agents/${made.agentId}/functions`)
    expect(functions.body.items.map((f: any) => f.name)).toEqual(["greet"])
    const bases = await call(node, admin.api_key, "GET", `/v1/agents/${made.agentId}/knowledge-bases`)
    expect(bases.body.items.map((b: any) => b.name)).toEqual(["Handbook"])
    await screenshot(page, "agent-attachments")

    await page.getByRole("button", { name: "Detach function greet" }).click()
    await page.getByRole("listitem").filter({ hasText: "Function greet" }).waitFor({ state: "detached" })
    expect((await call(node, admin.api_key, "GET", `/v1/agents/${made.agentId}/functions`)).body.items).toEqual([])
  })

  it("a Member searches and invokes but manages nothing, and the API refuses it when forced", async () => {
    const context = await windowOf(browser, 390)
    const page = await signInAs(context, node.baseUrl, member.email, PASSWORD)
    await go(page, "/knowledge-bases")
    await page.getByRole("link", { name: "Handbook" }).click()
    await page.getByRole("heading", { name: "Handbook", level: 1 }).waitFor()
    expect(await page.getByRole("button", { name: "Add document" }).count()).toBe(0)
    expect(await page.getByRole("button", { name: /^Delete/ }).count()).toBe(0)
    await page.getByLabel("Search the documents").fill("receipts")
    await page.keyboard.press("Enter") // by keyboard
    await page.getByRole("list", { name: "Search results" }).getByText("notes/expenses.md").waitFor()

    await go(page, `/functions/${made.functionId}?version=1`)
    expect(await page.getByRole("button", { name: "Edit" }).count()).toBe(0)
    await page.getByLabel(/^name/).fill("Member")
    await page.keyboard.press("Enter")
    const result = page.getByRole("status", { name: "Invocation result" })
    expect(await result.textContent()).toContain("Hello, Member!")
    await go(page, "/functions")
    expect(await page.getByRole("button", { name: "New function" }).count()).toBe(0)

    const forced = await page.evaluate(async (baseId) => {
      const session = await (await fetch("/console/api/session")).json()
      const post = (path: string, body: unknown) =>
        fetch(path, {
          method: "POST",
          headers: { "content-type": "application/json", "x-csrf-token": session.csrf_token },
          body: JSON.stringify(body)
        }).then((r) => r.status)
      return {
        base: await post("/v1/knowledge-bases", { name: "Mine" }),
        document: await post(`/v1/knowledge-bases/${baseId}/documents`, { name: "x.txt", text: "x" }),
        fn: await post("/v1/functions", { name: "mine", code: "export default async () => 1" })
      }
    }, made.baseId)
    expect(forced).toEqual({ base: 403, document: 403, fn: 403 })
    await context.close()
  })

  it("the new pages pass axe-core at 1280 and 390 px, fit the width, and are screenshotted", async () => {
    // [screenshot name, page, the button that opens its form (checked open too)]
    const pages: Array<[string, string, string?]> = [
      ["knowledge-bases", "/knowledge-bases"],
      ["knowledge-base-new", "/knowledge-bases", "New knowledge base"],
      ["knowledge-base", `/knowledge-bases/${made.baseId}`],
      ["knowledge-base-add-document", `/knowledge-bases/${made.baseId}`, "Add document"],
      ["functions", "/functions"],
      ["function-new", "/functions", "New function"],
      ["function", `/functions/${made.functionId}`],
      ["function-edit", `/functions/${made.functionId}`, "Edit"]
    ]
    for (const width of [1280, 390] as const) {
      const context = await windowOf(browser, width)
      const page = await signInAs(context, node.baseUrl, admin.email, PASSWORD)
      for (const [name, path, open] of pages) {
        await go(page, path)
        await page.getByRole("heading", { level: 1 }).first().waitFor()
        if (open !== undefined) {
          await page.getByRole("button", { name: open, exact: true }).click()
          await page.getByRole("form").first().waitFor()
        }
        await page.waitForFunction(() =>
          Array.from(document.querySelectorAll("[role=status]")).every((e) => e.textContent !== "Loading…")
        )
        await expectAccessible(page, `${name} at ${width}px`)
        await screenshot(page, `${name}-${width}`)
        await expectNoSideways(page, `${name} at ${width}px`)
      }
      await context.close()
    }
  })

  it("deletes a function and a knowledge base from their pages", async () => {
    const page = adminPage
    await go(page, `/functions/${made.functionId}`)
    page.once("dialog", (d) => d.accept())
    await page.getByRole("button", { name: "Delete function greet" }).click()
    await page.getByRole("heading", { name: "Functions", level: 1 }).waitFor()
    await page.getByText("No functions yet.").waitFor()
    await go(page, `/knowledge-bases/${made.baseId}`)
    page.once("dialog", (d) => d.accept())
    await page.getByRole("button", { name: "Delete knowledge base Handbook" }).click()
    await page.getByRole("heading", { name: "Knowledge bases", level: 1 }).waitFor()
    await page.getByText("No knowledge bases yet.").waitFor()
    expect((await call(node, admin.api_key, "GET", `/v1/knowledge-bases/${made.baseId}`)).status).toBe(404)
  })
})
