import type { Browser } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call, scriptedAgent } from "../access/support.js"
import { PASSWORD, setPassword, signedUpAdmin } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { CHROMIUM, ensureConsoleBuilt, launch, signInAs, windowOf } from "./support.js"

let node: TestNode
let browser: Browser
let alpha: Awaited<ReturnType<typeof signedUpAdmin>>

beforeAll(async () => {
  if (CHROMIUM === undefined) return
  ensureConsoleBuilt()
  node = await startTestNode()
  alpha = await signedUpAdmin(node, "Alpha Org")
  const beta = await signedUpAdmin(node, "Beta Org")
  // Alpha's admin is a Member of Beta too
  const added = await call(node, beta.api_key, "POST", "/v1/members", { email: alpha.email, role: "member" })
  expect(added.status).toBe(201)
  expect((await call(node, alpha.api_key, "POST", "/v1/agents", scriptedAgent("Alpha bot"))).status).toBe(201)
  expect((await call(node, beta.api_key, "POST", "/v1/agents", scriptedAgent("Beta bot"))).status).toBe(201)
  browser = await launch()
}, 120_000)
afterAll(async () => {
  await browser?.close()
  await node?.stop()
})

describe.skipIf(CHROMIUM === undefined)("the console when its session changes", () => {
  it("Sign out shows the sign-in form, and the pages' data is gone", async () => {
    const context = await windowOf(browser)
    const page = await signInAs(context, node.baseUrl, alpha.email, PASSWORD)
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" }).click()
    await page.getByRole("link", { name: "Alpha bot" }).waitFor()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("Email").waitFor()
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0)
    expect(await page.getByText("Alpha bot").count()).toBe(0)
    await context.close()
  })

  it("switching organization shows the other organization's role and agents, not the last one's", async () => {
    const context = await windowOf(browser)
    const page = await signInAs(context, node.baseUrl, alpha.email, PASSWORD)
    const agents = page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" })
    await agents.click()
    await page.getByRole("link", { name: "Alpha bot" }).waitFor()
    await page.getByRole("combobox", { name: "Organization" }).selectOption({ label: "Beta Org" })
    await page.getByText(`${alpha.email} · Member`).waitFor()
    // a Member of Beta: no Admin pages in the navigation any more
    expect(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Audit log" }).count())
      .toBe(0)
    await agents.click()
    await page.getByRole("link", { name: "Beta bot" }).waitFor()
    expect(await page.getByText("Alpha bot").count()).toBe(0)
    await context.close()
  })

  it("a session ended in another tab sends this tab back to the sign-in form at its next call", async () => {
    const context = await windowOf(browser)
    const page = await signInAs(context, node.baseUrl, alpha.email, PASSWORD)
    // the overview's calls answered before the session ends (else this tab notices it already)
    await page.getByText("No tasks yet.").waitFor()
    await page.waitForLoadState("networkidle")
    const other = await context.newPage()
    await other.goto(`${node.baseUrl}/console/`)
    await other.getByRole("button", { name: "Sign out" }).click()
    await other.getByLabel("Email").waitFor()
    await page.bringToFront()
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tasks" }).click()
    await page.getByLabel("Email").waitFor()
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0)
    // and signing in again works from there
    await page.getByLabel("Email").fill(alpha.email)
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("button", { name: "Sign out" }).waitFor()
    await context.close()
  })

  it("an Admin is offered no role above their own, nor a Super admin's role or Remove to change", async () => {
    const admin = await addMember(node, alpha.api_key, "admin")
    await setPassword(node, admin.email, PASSWORD)
    const member = await addMember(node, alpha.api_key, "member")
    const context = await windowOf(browser)
    const page = await signInAs(context, node.baseUrl, admin.email, PASSWORD)
    await page.goto(`${node.baseUrl}/console/settings/members`)
    const memberRole = page.getByRole("combobox", { name: `Role of ${member.email}` })
    await memberRole.waitFor()
    const options = (select: typeof memberRole) => select.locator("option").allTextContents()
    expect(await options(memberRole)).toEqual(["Member", "Builder", "Admin"])
    expect(await options(page.getByRole("combobox", { name: "Role", exact: true }))).toEqual([
      "Member",
      "Builder",
      "Admin"
    ])
    // the Super admin's row: their role as text, no Remove
    expect(await page.getByRole("combobox", { name: `Role of ${alpha.email}` }).count()).toBe(0)
    expect(await page.getByRole("button", { name: `Remove ${alpha.email}` }).count()).toBe(0)
    await page.getByRole("button", { name: `Remove ${member.email}` }).waitFor()
    // what the console hides the API refuses
    const refused = await call(node, admin.key, "PATCH", `/v1/members/${member.userId}`, { role: "super_admin" })
    expect(refused.status).toBe(403)
    // nor Revoke on the Super admin's key, only on keys at or below their role
    const keys = (await call(node, alpha.api_key, "GET", "/v1/api-keys")).body.items as Array<any>
    const superKey = keys.find((k) => k.role === "super_admin")
    await page.goto(`${node.baseUrl}/console/settings/api-keys`)
    await page.getByRole("button", { name: "Revoke member key" }).waitFor()
    expect(await page.getByRole("cell", { name: superKey.name, exact: true }).count()).toBe(1)
    expect(await page.getByRole("button", { name: `Revoke ${superKey.name}` }).count()).toBe(0)
    expect((await call(node, admin.key, "DELETE", `/v1/api-keys/${superKey.id}`)).status).toBe(403)
    await context.close()
  })

  it("a node it cannot reach is said so, with a way to try again, and a failed list is not shown as empty", async () => {
    const context = await windowOf(browser)
    const page = await context.newPage()
    // the connection fails before any answer, as with a node that is down
    await page.route("**/console/api/session", (route) => route.abort("connectionrefused"))
    await page.goto(`${node.baseUrl}/console/`)
    await page.getByRole("alert").filter({ hasText: "Could not reach the Switchyard node" }).waitFor()
    await page.unroute("**/console/api/session")
    await page.getByRole("button", { name: "Try again" }).click()
    await page.getByLabel("Email").fill(alpha.email)
    await page.getByLabel("Password").fill(PASSWORD)
    await page.getByRole("button", { name: "Sign in", exact: true }).click()
    await page.getByRole("button", { name: "Sign out" }).waitFor()
    await page.route("**/v1/agents*", (route) => route.abort("connectionrefused"))
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Agents" }).click()
    await page.getByRole("alert").filter({ hasText: "Could not reach the Switchyard node" }).waitFor()
    // nothing was read: no empty list, no table, as if there were no agents
    expect(await page.getByRole("table").count()).toBe(0)
    expect(await page.getByText("No agents yet").count()).toBe(0)
    await page.unroute("**/v1/agents*")
    // a refused call likewise: the API's error, not "no events match"
    await page.goto(`${node.baseUrl}/console/audit-log?from=2026-13-45`)
    await page.getByRole("alert").filter({ hasText: "validation_failed" }).waitFor()
    expect(await page.getByText("No audit events match these filters.").count()).toBe(0)
    await context.close()
  })
})
