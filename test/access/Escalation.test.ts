import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { addMember, auditEvents, call, expectError, makeWorld, orgKey, scriptedAgent } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("keys never carry more than their issuer holds", () => {
  it("an Admin may not issue a personal key for a Super admin, only for members at or below their role", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    const forged = await call(node, admin.key, "POST", "/v1/api-keys", { name: "x", user_id: org.user_id })
    expectError(forged, 403, "forbidden")
    expect(forged.body.error.message).toContain("Super admin")
    const member = await addMember(node, org.api_key, "member")
    const forMember = await call(node, admin.key, "POST", "/v1/api-keys", { name: "m", user_id: member.userId })
    expect(forMember.status).toBe(201)
    expect(forMember.body.role).toBe("member")
    const peer = await addMember(node, org.api_key, "admin")
    expect((await call(node, admin.key, "POST", "/v1/api-keys", { name: "p", user_id: peer.userId })).status).toBe(201)
  })

  it("an organization key is lowered with its creator, so a demoted Admin cannot restore their role with it", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    const adminOrgKey = await orgKey(node, admin.key, "admin")
    const builderOrgKey = await orgKey(node, admin.key, "builder")
    const demoted = await call(node, org.api_key, "PATCH", `/v1/members/${admin.userId}`, { role: "builder" })
    expect(demoted.status).toBe(200)
    expect((await call(node, adminOrgKey.key, "GET", "/v1/me")).body.role).toBe("builder")
    expect((await call(node, builderOrgKey.key, "GET", "/v1/me")).body.role).toBe("builder")
    expectError(
      await call(node, adminOrgKey.key, "PATCH", `/v1/members/${admin.userId}`, { role: "admin" }),
      403,
      "forbidden"
    )
    const [record] = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_MEMBER_ROLE")
    expect(record.details).toEqual({ from: "admin", to: "builder", lowered_api_keys: [adminOrgKey.keyId] })
  })
})

describe("revoking keys", () => {
  it("an Admin may not revoke a Super admin's keys (that would lock them out), only keys at or below their role", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    const superKey = await orgKey(node, org.api_key, "super_admin")
    const bootstrapKeyId = (await call(node, org.api_key, "GET", "/v1/me")).body.key.id
    const personal = await call(node, admin.key, "DELETE", `/v1/api-keys/${bootstrapKeyId}`)
    expectError(personal, 403, "forbidden")
    expect(personal.body.error.message).toContain("a key of a Super admin")
    expectError(await call(node, admin.key, "DELETE", `/v1/api-keys/${superKey.keyId}`), 403, "forbidden")
    expect((await call(node, org.api_key, "GET", "/v1/me")).status).toBe(200)
    // a peer's, a lower key, and their own
    const peer = await addMember(node, org.api_key, "admin")
    const member = await addMember(node, org.api_key, "member")
    for (const id of [peer.keyId, member.keyId, admin.keyId]) {
      expect((await call(node, admin.key, "DELETE", `/v1/api-keys/${id}`)).status, id).toBe(200)
    }
    // a Super admin revokes another Super admin's key
    expect((await call(node, org.api_key, "DELETE", `/v1/api-keys/${superKey.keyId}`)).status).toBe(200)
  })
})

describe("a key limited to agents mints nothing wider", () => {
  it("creates organization keys only within its agents, and no personal keys for others", async () => {
    const { admin, agent, person } = await makeWorld(node)
    const other = (await call(node, admin, "POST", "/v1/agents", scriptedAgent("Other"))).body
    const limited = await call(node, admin, "POST", "/v1/api-keys", {
      name: "limited",
      kind: "organization",
      role: "admin",
      agent_ids: [agent.id]
    })
    const key = limited.body.api_key
    for (
      const body of [
        { name: "wide", kind: "organization", role: "admin" },
        { name: "other", kind: "organization", agent_ids: [other.id] },
        { name: "both", kind: "organization", agent_ids: [agent.id, other.id] }
      ]
    ) {
      const r = await call(node, key, "POST", "/v1/api-keys", body)
      expectError(r, 403, "forbidden")
      expect(r.body.error.message).toContain(agent.id)
    }
    const forMember = await call(node, key, "POST", "/v1/api-keys", { name: "m", user_id: person.userId })
    expectError(forMember, 403, "forbidden")
    const within = await call(node, key, "POST", "/v1/api-keys", {
      name: "within",
      kind: "organization",
      agent_ids: [agent.id]
    })
    expect(within.status).toBe(201)
    expect(within.body.agent_ids).toEqual([agent.id])
    expectError(await call(node, within.body.api_key, "GET", `/v1/agents/${other.id}`), 404, "not_found")
  })

  it("reaches its agents only: what belongs to the whole organization is refused to it, whatever its role", async () => {
    const { admin, agent } = await makeWorld(node)
    const limited = await call(node, admin, "POST", "/v1/api-keys", {
      name: "limited admin",
      kind: "organization",
      role: "admin",
      agent_ids: [agent.id]
    })
    const key = limited.body.api_key
    const refused: Array<[string, string, unknown?]> = [
      ["GET", "/v1/members"],
      ["POST", "/v1/members", { email: "x@example.com", name: "X" }],
      ["GET", "/v1/groups"],
      ["GET", "/v1/audit-logs"],
      ["PUT", "/v1/model-providers/openai", { api_key: "sk-test" }],
      ["POST", "/v1/agents", scriptedAgent("Unseen")],
      ["POST", "/v1/tools/connectors", { spec: { openapi: "3.0.3", info: { title: "T", version: "1" }, paths: {} } }]
    ]
    for (const [method, path, body] of refused) {
      const r = await call(node, key, method, path, body)
      expectError(r, 403, "forbidden")
      expect(r.body.error.message, `${method} ${path}`).toContain("A key limited to agents may not")
    }
    // its own agent it reads and invokes as before
    expect((await call(node, key, "GET", `/v1/agents/${agent.id}`)).status).toBe(200)
    const task = await call(node, key, "POST", `/v1/agents/${agent.id}/invoke`, {
      input: { text: "hi", user: { id: "u", email: "u@example.com" } }
    })
    expect(task.body.status).toBe("completed")
  })

  it("a key made with an organization key is lowered with the member who made that key", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    const first = await orgKey(node, admin.key, "admin")
    const second = await orgKey(node, first.key, "admin")
    const demoted = await call(node, org.api_key, "PATCH", `/v1/members/${admin.userId}`, { role: "member" })
    expect(demoted.status).toBe(200)
    expect((await call(node, second.key, "GET", "/v1/me")).body.role).toBe("member")
    const [record] = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "UPDATE_MEMBER_ROLE")
    expect(record.details.lowered_api_keys.sort()).toEqual([first.keyId, second.keyId].sort())
  })
})

describe("organization keys and the skill catalog", () => {
  it("a Member organization key lists the published catalog, not drafts or private skills", async () => {
    const { admin, connection, org } = await makeWorld(node)
    const builder = await addMember(node, admin, "builder")
    const draft = await call(node, builder.key, "POST", "/v1/skills", {
      name: "draft",
      actions: [{ connection_id: connection.id, operation_id: "getPet" }]
    })
    expect(draft.status).toBe(201)
    const key = await orgKey(node, org.api_key, "member")
    const listed = await call(node, key.key, "GET", "/v1/skills")
    expect(listed.status).toBe(200)
    expect(listed.body.items.map((s: any) => s.id)).not.toContain(draft.body.id)
    expect(listed.body.items.every((s: any) => s.status === "published" && s.visibility === "organization")).toBe(true)
    // the agent's creator still sees their own draft, an Admin every skill
    expect((await call(node, builder.key, "GET", "/v1/skills")).body.items.map((s: any) => s.id)).toContain(
      draft.body.id
    )
    expect((await call(node, org.api_key, "GET", "/v1/skills")).body.items.map((s: any) => s.id)).toContain(
      draft.body.id
    )
  })
})

describe("a cursor this API did not return", () => {
  const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

  it("is 400 invalid_cursor on every keyset list, whatever it holds", async () => {
    const org = await node.bootstrap()
    const group = (await call(node, org.api_key, "POST", "/v1/groups", { name: "g" })).body
    const kb = (await call(node, org.api_key, "POST", "/v1/knowledge-bases", { name: "kb" })).body
    const lists = [
      "/v1/tasks",
      "/v1/skills",
      "/v1/approvals",
      "/v1/knowledge-bases",
      "/v1/groups",
      `/v1/groups/${group.id}/members`,
      "/v1/schedules",
      "/v1/agents",
      "/v1/functions",
      "/v1/webhooks",
      "/v1/members"
    ]
    const uuid = "0199a0b0-0000-7000-8000-000000000000"
    const bad = [
      cursor(["2026-11-27T06:58:06.534Z", "not-uuid"]),
      cursor([-8.64e15, uuid]),
      cursor(["+275760-09-13T00:00:00.000Z", uuid]),
      cursor(["2026-11-27", uuid]),
      cursor(["2026-11-27T06:58:06.534Z", `${uuid}\u0000`])
    ]
    for (const path of lists) {
      for (const c of bad) {
        const r = await call(node, org.api_key, "GET", `${path}?cursor=${c}`)
        expect(r.status, `${path} ${Buffer.from(c, "base64url").toString()}`).toBe(400)
        expectError(r, 400, "invalid_cursor")
      }
      expect(
        (await call(node, org.api_key, "GET", `${path}?cursor=${cursor(["2026-11-27T06:58:06.534Z", uuid])}`)).status
      )
        .toBe(200)
    }
    expect(kb.id).toBeDefined()
  })
})
