import pg from "pg"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call } from "../access/support.js"
import { PASSWORD, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { foldedByNode, seedTasks } from "../usage/support.js"
import { CHROMIUM, ensureConsoleBuilt, launch, signInAs, windowOf } from "./support.js"

let node: TestNode
let browser: Browser
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
let page: Page

beforeAll(async () => {
  if (CHROMIUM === undefined) return
  ensureConsoleBuilt()
  node = await startTestNode()
  admin = await signedUpAdmin(node, "Overview Org")
  browser = await launch()
  page = await signInAs(await windowOf(browser), node.baseUrl, admin.email, PASSWORD)
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await node?.stop()
})

const DAY = 86_400_000
const stat = (name: string) => page.getByRole("term").filter({ hasText: name }).locator("xpath=following-sibling::dd")

describe.skipIf(CHROMIUM === undefined)("the console's Overview and audit log dates (headless Chromium)", () => {
  it("Overview counts the last 30 days only, not back to the start of last month", async () => {
    const agent = (await call(node, admin.api_key, "POST", "/v1/agents", {
      name: "Counter",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })).body.id as string
    const db = new pg.Pool({ connectionString: node.databaseUrl, max: 2 })
    try {
      const task = (at: Date, input: number) => ({
        agentId: agent,
        userId: "u-1",
        source: "api" as const,
        status: "completed" as const,
        createdAt: at,
        durationMs: 1000,
        calls: [{ provider: "openai", model: "gpt-4o-mini", input, output: 0, cached: 0, cost: 0, at }]
      })
      // one task a day ago, one 31 days ago: in the month bucket of "30 days ago" unless that day is the 1st
      await seedTasks(db, admin.organization_id, [
        task(new Date(Date.now() - DAY), 7),
        task(new Date(Date.now() - 31 * DAY), 1_000_000)
      ])
      await foldedByNode(db)
    } finally {
      await db.end()
    }
    await page.goto(`${node.baseUrl}/console/`)
    await page.getByRole("heading", { name: "Last 30 days" }).waitFor()
    await expect.poll(() => stat("Tokens").textContent()).toBe("7")
    expect(await stat("Tasks completed").textContent()).toBe("1")
    expect(await stat("Model calls").textContent()).toBe("1")
  })

  it("the audit log's To date includes its own day (the API's `to` is exclusive)", async () => {
    const today = new Date().toISOString().slice(0, 10)
    await page.goto(`${node.baseUrl}/console/audit-log`)
    await page.getByRole("cell", { name: "CREATE_ORGANIZATION" }).waitFor()
    await page.getByLabel("From", { exact: true }).fill(today)
    await page.getByLabel("To", { exact: true }).fill(today)
    await page.getByRole("button", { name: "Filter" }).click()
    await page.waitForURL(new RegExp(`to=${today}`))
    await page.getByRole("cell", { name: "CREATE_ORGANIZATION" }).waitFor()
    expect(await page.getByText("No audit events match these filters.").count()).toBe(0)

    // an address edited by hand goes to the API as it is, and its answer is shown
    await page.goto(`${node.baseUrl}/console/audit-log?to=yesterday`)
    await page.getByText("validation_failed").waitFor()
  })
})
