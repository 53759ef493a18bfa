import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import {
  addMember,
  auditEvents,
  call,
  expectError,
  makeWorld,
  orgKey,
  scriptedAgent,
  uniqueEmail,
  type World
} from "./support.js"

interface Route {
  readonly name: string
  /** The weakest role allowed. */
  readonly min: "builder" | "admin" | "super_admin"
  readonly request: (w: World) => readonly [method: string, path: string, body?: unknown]
}

const connectorDoc = { openapi: "3.0.3", info: { title: "Other", version: "1" }, paths: {} }

/** Every route that changes or reveals what only builders or admins may, and the weakest role allowed. */
const routes: ReadonlyArray<Route> = [
  { name: "list members", min: "admin", request: () => ["GET", "/v1/members"] },
  { name: "add a member", min: "admin", request: () => ["POST", "/v1/members", { email: uniqueEmail() }] },
  {
    name: "change a member's role",
    min: "admin",
    request: (w) => ["PATCH", `/v1/members/${w.person.userId}`, { role: "builder" }]
  },
  { name: "remove a member", min: "admin", request: (w) => ["DELETE", `/v1/members/${w.person.userId}`] },
  {
    name: "create an organization key",
    min: "admin",
    request: () => ["POST", "/v1/api-keys", { name: "k", kind: "organization" }]
  },
  {
    name: "issue a key for another member",
    min: "admin",
    request: (w) => ["POST", "/v1/api-keys", { name: "k", user_id: w.person.userId }]
  },
  { name: "list groups", min: "admin", request: () => ["GET", "/v1/groups"] },
  { name: "create a group", min: "admin", request: () => ["POST", "/v1/groups", { name: uniqueEmail("g") }] },
  { name: "read a group", min: "admin", request: (w) => ["GET", `/v1/groups/${w.group.id}`] },
  {
    name: "change a group",
    min: "admin",
    request: (w) => ["PATCH", `/v1/groups/${w.group.id}`, { description: "x" }]
  },
  { name: "delete a group", min: "admin", request: (w) => ["DELETE", `/v1/groups/${w.group.id}`] },
  { name: "list a group's members", min: "admin", request: (w) => ["GET", `/v1/groups/${w.group.id}/members`] },
  {
    name: "add to a group",
    min: "admin",
    request: (w) => ["POST", `/v1/groups/${w.group.id}/members`, { email: uniqueEmail() }]
  },
  {
    name: "remove from a group",
    min: "admin",
    request: (w) => ["DELETE", `/v1/groups/${w.group.id}/members/${w.person.userId}`]
  },
  { name: "read the audit log", min: "admin", request: () => ["GET", "/v1/audit-logs"] },
  { name: "export the audit log", min: "admin", request: () => ["GET", "/v1/audit-logs/export?format=csv"] },
  {
    name: "configure a model provider",
    min: "admin",
    request: () => ["PUT", "/v1/model-providers/openai", { api_key: "sk-test" }]
  },
  { name: "create an agent", min: "builder", request: () => ["POST", "/v1/agents", scriptedAgent("New")] },
  { name: "change an agent", min: "builder", request: (w) => ["PATCH", `/v1/agents/${w.agent.id}`, { name: "B" }] },
  { name: "delete an agent", min: "builder", request: (w) => ["DELETE", `/v1/agents/${w.agent.id}`] },
  { name: "add a connector", min: "builder", request: () => ["POST", "/v1/tools/connectors", { spec: connectorDoc }] },
  {
    name: "replace a connector",
    min: "builder",
    request: (w) => ["PUT", `/v1/tools/connectors/${w.connector.id}`, { spec: connectorDoc }]
  },
  { name: "archive a connector", min: "builder", request: (w) => ["DELETE", `/v1/tools/connectors/${w.connector.id}`] },
  {
    name: "create an organizational connection",
    min: "builder",
    request: (w) => [
      "POST",
      `/v1/tools/connectors/${w.connector.id}/connections`,
      { name: "org", credentials: { type: "api_key", value: "v" } }
    ]
  },
  {
    name: "change an organizational connection",
    min: "builder",
    request: (w) => ["PATCH", `/v1/tools/connectors/${w.connector.id}/connections/${w.connection.id}`, { name: "n" }]
  },
  {
    name: "delete an organizational connection",
    min: "builder",
    request: (w) => ["DELETE", `/v1/tools/connectors/${w.connector.id}/connections/${w.connection.id}`]
  },
  {
    name: "grant Super admin",
    min: "super_admin",
    request: (w) => ["PATCH", `/v1/members/${w.person.userId}`, { role: "super_admin" }]
  }
]

const ranks = { member: 0, builder: 1, admin: 2, super_admin: 3 } as const
type Caller = { readonly label: string; readonly rank: number; readonly key: string }

let node: TestNode
let world: World
let callers: ReadonlyArray<Caller>
beforeAll(async () => {
  node = await startTestNode()
  world = await makeWorld(node, "Matrix")
  const make = async (role: "member" | "builder" | "admin") => ({
    label: role,
    rank: ranks[role],
    key: (await addMember(node, world.admin, role)).key
  })
  const organizationKey = async (role: "member" | "builder" | "admin") => ({
    label: `organization key (${role})`,
    rank: ranks[role],
    key: (await orgKey(node, world.admin, role)).key
  })
  callers = [
    await make("member"),
    await make("builder"),
    await make("admin"),
    await organizationKey("member"),
    await organizationKey("builder"),
    await organizationKey("admin")
  ]
})
afterAll(() => node?.stop())

const denials = () =>
  routes.flatMap((route) =>
    [["member", 0], ["builder", 1], ["admin", 2]]
      .filter(([, rank]) => (rank as number) < ranks[route.min])
      .map(([role]) => [route.name, role as string] as const)
  )

describe("role matrix", () => {
  it.each(denials())("%s: refused to %s with 403 forbidden (personal and organization keys)", async (name, role) => {
    const route = routes.find((r) => r.name === name)!
    for (const caller of callers.filter((c) => c.label === role || c.label === `organization key (${role})`)) {
      const [method, path, body] = route.request(world)
      const response = await call(node, caller.key, method, path, body)
      expectError(response, 403, "forbidden")
    }
  })

  it("records every refusal as one denied audit event, and nothing else changed", async () => {
    const events = await auditEvents(node, world.org.organization_id)
    const denied = events.filter((e) => e.action === "ACCESS_DENIED")
    expect(denied.length).toBe(denials().length * 2)
    expect(denied.every((e) => e.outcome === "denied" && e.targets[0].type === "route")).toBe(true)
    // the world is as it was: no agent, connector, connection, group or member was touched
    const agent = await call(node, world.admin, "GET", `/v1/agents/${world.agent.id}`)
    expect(agent.body.name).toBe("Helper")
    const group = await call(node, world.admin, "GET", `/v1/groups/${world.group.id}`)
    expect(group.body).toMatchObject({ description: "", member_count: 1 })
    const members = await call(node, world.admin, "GET", "/v1/members")
    expect(members.body.items.find((m: any) => m.user.id === world.person.userId).role).toBe("member")
  })

  it.each(routes.map((r) => [r.name, r.min] as const))("%s: allowed to %s", async (name, min) => {
    // a fresh world, so destructive routes act on their own resources
    const fresh = await makeWorld(node)
    const key = min === "super_admin" ? fresh.admin : (await addMember(node, fresh.admin, min)).key
    const [method, path, body] = routes.find((r) => r.name === name)!.request(fresh)
    const response = await call(node, key, method, path, body)
    expect(response.status, JSON.stringify(response.body)).toBeLessThan(300)
  })
})
