import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { auditEvents, call, expectError, makeWorld, type World } from "./support.js"

let node: TestNode
let a: World
let b: World
beforeAll(async () => {
  node = await startTestNode()
  a = await makeWorld(node, "A")
  b = await makeWorld(node, "B")
})
afterAll(() => node?.stop())

type Attempt = readonly [name: string, request: () => readonly [method: string, path: string, body?: unknown]]

/** Everything org A's Super admin might try on org B's members, groups, keys: each looks absent. */
const attempts: ReadonlyArray<Attempt> = [
  ["change B's member's role", () => ["PATCH", `/v1/members/${b.person.userId}`, { role: "admin" }]],
  ["remove B's member", () => ["DELETE", `/v1/members/${b.person.userId}`]],
  ["read B's group", () => ["GET", `/v1/groups/${b.group.id}`]],
  ["change B's group", () => ["PATCH", `/v1/groups/${b.group.id}`, { name: "mine" }]],
  ["delete B's group", () => ["DELETE", `/v1/groups/${b.group.id}`]],
  ["list B's group's members", () => ["GET", `/v1/groups/${b.group.id}/members`]],
  ["add to B's group", () => ["POST", `/v1/groups/${b.group.id}/members`, { user_id: a.person.userId }]],
  ["remove from B's group", () => ["DELETE", `/v1/groups/${b.group.id}/members/${b.person.userId}`]],
  ["add B's member to A's group", () => ["POST", `/v1/groups/${a.group.id}/members`, { user_id: b.person.userId }]],
  ["revoke B's key", () => ["DELETE", `/v1/api-keys/${b.person.keyId}`]],
  ["issue a key for B's member", () => ["POST", "/v1/api-keys", { name: "x", user_id: b.person.userId }]]
]

describe("cross-organization matrix", () => {
  it.each(attempts)("org A cannot %s (404)", async (_, request) => {
    const [method, path, body] = request()
    expectError(await call(node, a.admin, method, path, body), 404, "not_found")
  })

  it("never lists another organization's members, groups, keys or audit records", async () => {
    const members = await call(node, a.admin, "GET", "/v1/members")
    expect(members.body.items.map((m: any) => m.user.id)).not.toContain(b.person.userId)
    const groups = await call(node, a.admin, "GET", "/v1/groups")
    expect(groups.body.items.map((g: any) => g.id)).toEqual([a.group.id])
    const keys = await call(node, a.admin, "GET", "/v1/api-keys")
    expect(keys.body.items.map((k: any) => k.id)).not.toContain(b.person.keyId)
    const log = await call(node, a.admin, "GET", "/v1/audit-logs?limit=500")
    expect(log.body.items.length).toBeGreaterThan(0)
    expect(log.body.items.every((e: any) => e.organization_id === a.org.organization_id)).toBe(true)
    const exported = JSON.parse(
      await (await node.fetch("/v1/audit-logs/export?format=json", { apiKey: a.admin })).text()
    )
    expect(exported.every((e: any) => e.organization_id === a.org.organization_id)).toBe(true)
    // filtering by B's actor finds nothing in A
    const byB = await call(node, a.admin, "GET", `/v1/audit-logs?actor=${b.org.user_id}`)
    expect(byB.body.items).toEqual([])
  })

  it("a default agent of another organization is unknown", async () => {
    const r = await call(node, a.admin, "POST", "/v1/groups", { name: "Borrowers", agent_ids: [b.agent.id] })
    expectError(r, 400, "unknown_agent")
  })

  it("left B exactly as it was, and wrote nothing into B's audit log", async () => {
    const group = await call(node, b.admin, "GET", `/v1/groups/${b.group.id}`)
    expect(group.body).toMatchObject({ name: b.group.name, member_count: 1 })
    const me = await call(node, b.person.key, "GET", "/v1/me")
    expect(me.body.role).toBe("member")
    const events = await auditEvents(node, b.org.organization_id)
    expect(events.every((e) => e.actor_id !== a.org.user_id)).toBe(true)
  })
})
