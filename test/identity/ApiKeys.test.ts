import { Effect, Exit } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentId } from "../../schema/Ids.js"
import { addMember, call, expectError, orgKey, pageThrough, withDatabase } from "../access/support.js"
import { eventually } from "../support/Poll.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

/** A scripted agent of the key's organization: its id. */
const createAgent = async (apiKey: string) => {
  const response = await node.fetch("/v1/agents", {
    method: "POST",
    apiKey,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "helper", model: { provider: "scripted", script: [{ text: "hi" }] } })
  })
  expect(response.status).toBe(201)
  return (await response.json()).id as AgentId
}

/** A new organization key, made over REST: its id and secret. */
const createKey = async (on: TestNode, apiKey: string, name: string) => {
  const created = await on.fetch("/v1/api-keys", {
    method: "POST",
    apiKey,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name })
  })
  expect(created.status).toBe(201)
  return (await created.json()) as { id: string; api_key: string }
}

const errorOf = async (response: Response) => {
  const body = await response.json()
  expect(body.error.request_id).toBe(response.headers.get("x-request-id"))
  expect(response.headers.get("x-switchyard-error")).toBe("true")
  return body.error as { code: string; message: string; details?: any }
}

describe("authentication", () => {
  it("identifies the caller with a valid key", async () => {
    const org = await node.bootstrap("Acme")
    const exit = await node.api(org.api_key, (c) => c.identity.me())
    expect(Exit.isSuccess(exit)).toBe(true)
    if (Exit.isSuccess(exit)) {
      expect(exit.value.organization.id).toBe(org.organization_id)
      expect(exit.value.organization.name).toBe("Acme")
      expect(exit.value.user?.id).toBe(org.user_id)
      expect(exit.value.role).toBe("super_admin")
      expect(exit.value.role_display).toBe("Super admin")
      expect(exit.value.key.kind).toBe("personal")
    }
  })

  it.each([
    ["missing", {}, "missing_api_key"],
    ["malformed", { "x-api-key": "hello" }, "malformed_api_key"],
    ["unknown", { "x-api-key": `sy_zzzzzzzzzzzz_${"a".repeat(43)}` }, "invalid_api_key"]
  ])("rejects a %s key with 401", async (_, headers, code) => {
    const response = await node.fetch("/v1/me", { headers })
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe(code)
  })

  it("rejects a right id with a wrong secret", async () => {
    const org = await node.bootstrap()
    const forged = org.api_key.slice(0, 16) + "A".repeat(43)
    const response = await node.fetch("/v1/me", { apiKey: forged })
    expect(response.status).toBe(401)
    expect((await errorOf(response)).code).toBe("invalid_api_key")
  })

  it("rejects Authorization: Bearer on REST, saying to use x-api-key", async () => {
    const org = await node.bootstrap()
    const response = await node.fetch("/v1/me", { headers: { authorization: `Bearer ${org.api_key}` } })
    expect(response.status).toBe(401)
    const error = await errorOf(response)
    expect(error.code).toBe("bearer_not_supported")
    expect(error.message).toContain("x-api-key")
  })

  it("rejects a revoked key at once", async () => {
    const org = await node.bootstrap()
    const key = await createKey(node, org.api_key, "temp")
    expect((await node.fetch("/v1/me", { apiKey: key.api_key })).status).toBe(200)
    const revoked = await node.fetch(`/v1/api-keys/${key.id}`, { method: "DELETE", apiKey: org.api_key })
    expect(revoked.status).toBe(200)
    expect((await revoked.json()).revoked_at).toMatch(/Z$/)
    const after = await node.fetch("/v1/me", { apiKey: key.api_key })
    expect(after.status).toBe(401)
    expect((await errorOf(after)).code).toBe("revoked_api_key")
  })
})

describe("API keys", () => {
  it("shows the secret once, stores it hashed, and records last use", async () => {
    const org = await node.bootstrap()
    const agent = await createAgent(org.api_key)
    const created = await node.api(
      org.api_key,
      (c) => c.identity.createApiKey({ payload: { name: "pipeline", kind: "organization", agent_ids: [agent] } })
    )
    if (!Exit.isSuccess(created)) throw new Error(String(created))
    expect(created.value.api_key).toMatch(/^sy_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/)
    expect(created.value.prefix).toBe(`sy_${created.value.id}_`)
    expect(created.value.agent_ids).toEqual([agent])
    expect(created.value.role).toBe("member")
    const list = await node.fetch("/v1/api-keys", { apiKey: org.api_key })
    const text = await list.text()
    expect(text).not.toContain(created.value.api_key.slice(16))
    expect(JSON.parse(text).items.map((k: any) => k.id)).toContain(created.value.id)
    const pg = await import("pg")
    const db = new pg.default.Client({ connectionString: node.databaseUrl })
    await db.connect()
    const { rows } = await db.query("SELECT secret_hash FROM api_keys WHERE id = $1", [created.value.id])
    await db.end()
    expect(Buffer.from(rows[0].secret_hash).length).toBe(32)
    expect(Buffer.from(rows[0].secret_hash).toString("utf8")).not.toContain(created.value.api_key.slice(16))
    await node.fetch("/v1/me", { apiKey: created.value.api_key })
    await new Promise((r) => setTimeout(r, 300))
    const me = await (await node.fetch("/v1/me", { apiKey: created.value.api_key })).json()
    expect(me.key.last_used_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
    expect(me.user).toBeNull()
  })

  it("lets a member manage only their own personal keys", async () => {
    const org = await node.bootstrap()
    const member = await node.fetch("/v1/members", {
      method: "POST",
      apiKey: org.api_key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `m-${Date.now()}@example.com`, name: "Mem" })
    })
    expect(member.status).toBe(201)
    const memberBody = await member.json()
    expect(memberBody.role).toBe("member")
    const issued = await node.api(
      org.api_key,
      (c) => c.identity.createApiKey({ payload: { name: "for member", kind: "personal", user_id: memberBody.user.id } })
    )
    if (!Exit.isSuccess(issued)) throw new Error(String(issued))
    const memberKey = issued.value.api_key

    const orgKey = await node.api(
      memberKey,
      (c) => c.identity.createApiKey({ payload: { name: "nope", kind: "organization" } }).pipe(Effect.flip)
    )
    expect(Exit.isSuccess(orgKey) && orgKey.value._tag).toBe("Forbidden")
    const own = await node.api(
      memberKey,
      (c) => c.identity.createApiKey({ payload: { name: "mine", kind: "personal" } })
    )
    expect(Exit.isSuccess(own)).toBe(true)
    const listed = await node.api(memberKey, (c) => c.identity.listApiKeys({ urlParams: {} }))
    if (!Exit.isSuccess(listed)) throw new Error(String(listed))
    expect(listed.value.items.every((k) => k.user_id === memberBody.user.id)).toBe(true)
    // the admin's key is invisible to the member, so revoking it is a 404
    const adminKeyId = org.api_key.slice(3, 15)
    const response = await node.fetch(`/v1/api-keys/${adminKeyId}`, { method: "DELETE", apiKey: memberKey })
    expect(response.status).toBe(404)
    const members = await node.fetch("/v1/members", { apiKey: memberKey })
    expect(members.status).toBe(403)
    expect((await errorOf(members)).code).toBe("forbidden")
  })

  it("lists every key newest first at once, or pages them oldest first with limit and cursor, as the key may see", async () => {
    const org = await node.bootstrap()
    const member = await addMember(node, org.api_key, "member")
    const own = await call(node, member.key, "POST", "/v1/api-keys", { name: "second", kind: "personal" })
    expect(own.status).toBe(201)
    const pipeline = await orgKey(node, org.api_key, "member")
    for (let i = 0; i < 2; i++) await orgKey(node, org.api_key, "builder")
    const all = await call(node, org.api_key, "GET", "/v1/api-keys")
    expect(Object.keys(all.body).sort()).toEqual(["items", "next_cursor", "total"])
    expect(all.body).toMatchObject({ total: 6, next_cursor: null })
    const byAge = (await withDatabase(node, (db) =>
      db.query(
        "SELECT id FROM api_keys WHERE organization_id = $1 ORDER BY date_trunc('milliseconds', created_at), id",
        [org.organization_id]
      ))).rows.map((r) => r.id)
    // without paging, newest first as before
    expect(all.body.items.map((k: any) => k.id)).toEqual([...byAge].reverse())
    expect(await pageThrough(node, org.api_key, "/v1/api-keys", 4)).toEqual({ ids: byAge, totals: [6, 6] })
    // a member pages their own keys; a key with no person behind it and below Admin sees none
    const mine = await pageThrough(node, member.key, "/v1/api-keys", 1)
    expect(mine).toEqual({ ids: byAge.filter((id) => [member.keyId, own.body.id].includes(id)), totals: [2, 2] })
    const none = await call(node, pipeline.key, "GET", "/v1/api-keys?limit=1")
    expect(none.body).toEqual({ items: [], total: 0, next_cursor: null })
    expectError(await call(node, org.api_key, "GET", "/v1/api-keys?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/api-keys?cursor=zz"), 400, "invalid_cursor")
    expectError(await call(node, pipeline.key, "GET", "/v1/api-keys?cursor=zz"), 400, "invalid_cursor")
  })

  it("refuses to grant a role above the caller's", async () => {
    const org = await node.bootstrap()
    const admin = await node.api(
      org.api_key,
      (c) => c.identity.createMember({ payload: { email: `a-${Date.now()}@example.com`, role: "admin" } as any })
    )
    if (!Exit.isSuccess(admin)) throw new Error(String(admin))
    const adminKey = await node.api(
      org.api_key,
      (c) => c.identity.createApiKey({ payload: { name: "admin", kind: "personal", user_id: admin.value.user.id } })
    )
    if (!Exit.isSuccess(adminKey)) throw new Error(String(adminKey))
    const response = await node.fetch("/v1/api-keys", {
      method: "POST",
      apiKey: adminKey.value.api_key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "too strong", kind: "organization", role: "super_admin" })
    })
    expect(response.status).toBe(403)
    const duplicate = await node.fetch("/v1/members", {
      method: "POST",
      apiKey: org.api_key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: admin.value.user.email })
    })
    expect(duplicate.status).toBe(409)
    expect((await errorOf(duplicate)).code).toBe("already_member")
  })
})

describe("an organization key's agent_ids", () => {
  const createKey = (apiKey: string, agentIds: ReadonlyArray<string>) =>
    node.fetch("/v1/api-keys", {
      method: "POST",
      apiKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "limited", kind: "organization", agent_ids: agentIds })
    })

  it("are live agents of the organization: an unknown, deleted or another organization's one is 400 unknown_agent", async () => {
    const org = await node.bootstrap()
    const other = await node.bootstrap()
    const mine = await createAgent(org.api_key)
    const deleted = await createAgent(org.api_key)
    expect((await node.fetch(`/v1/agents/${deleted}`, { method: "DELETE", apiKey: org.api_key })).status).toBe(204)
    const theirs = await createAgent(other.api_key)
    const unknown = "00000000-0000-0000-0000-000000000000"
    // another organization's agent is refused in the very words of one that does not exist
    for (const id of [unknown, deleted, theirs]) {
      const response = await createKey(org.api_key, [mine, id])
      expect(response.status).toBe(400)
      expect(await errorOf(response)).toEqual({
        code: "unknown_agent",
        message: `\`agent_ids\`: no agent '${id}' in this organization.`,
        details: { unknown_agent_ids: [id] },
        request_id: expect.any(String)
      })
    }
    // nothing was made, and the key of a live agent is (repeats once)
    const keys = await (await node.fetch("/v1/api-keys", { apiKey: org.api_key })).json()
    expect(keys.items.filter((k: any) => k.name === "limited")).toEqual([])
    const made = await createKey(org.api_key, [mine, mine])
    expect(made.status).toBe(201)
    expect((await made.json()).agent_ids).toEqual([mine])
  })
})

describe("cross-organization isolation", () => {
  it("never shows or touches another organization's keys and members", async () => {
    const a = await node.bootstrap("A")
    const b = await node.bootstrap("B")
    const aKeys = await (await node.fetch("/v1/api-keys", { apiKey: a.api_key })).json()
    const bKeys = await (await node.fetch("/v1/api-keys", { apiKey: b.api_key })).json()
    const aIds = aKeys.items.map((k: any) => k.id)
    for (const key of bKeys.items) expect(aIds).not.toContain(key.id)
    const bKeyId = b.api_key.slice(3, 15)
    const revoke = await node.fetch(`/v1/api-keys/${bKeyId}`, { method: "DELETE", apiKey: a.api_key })
    expect(revoke.status).toBe(404)
    expect((await node.fetch("/v1/me", { apiKey: b.api_key })).status).toBe(200)
    const members = await (await node.fetch("/v1/members", { apiKey: a.api_key })).json()
    expect(members.items.map((m: any) => m.user.id)).toEqual([a.user_id])
    const issue = await node.api(
      a.api_key,
      (c) => c.identity.createApiKey({ payload: { name: "steal", kind: "personal", user_id: b.user_id as any } })
    )
    expect(Exit.isFailure(issue)).toBe(true)
  })
})

describe("a key's cache on a node", () => {
  let short: TestNode
  beforeAll(async () => {
    short = await startTestNode({ SWITCHYARD_API_KEY_CACHE_TTL: "1 second" })
  })
  afterAll(() => short?.stop())

  it("keeps a key in constant use working across its cache time, and sees a revocation from elsewhere", async () => {
    const org = await short.bootstrap()
    const key = await createKey(short, org.api_key, "busy")
    const burst = () => Promise.all(Array.from({ length: 5 }, () => short.fetch("/v1/me", { apiKey: key.api_key })))

    // three cache times of requests (the key read again in the background before each lapse): none refused
    const statuses: Array<number> = []
    for (const started = Date.now(); Date.now() - started < 3_000;) {
      statuses.push(...(await burst()).map((r) => r.status))
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(new Set(statuses)).toEqual(new Set([200]))

    // revoked in the database, as another node does: this node, reading the key again, refuses it from then on
    await withDatabase(short, (db) => db.query("UPDATE api_keys SET revoked_at = now() WHERE id = $1", [key.id]))
    const refused = await eventually(async () => {
      const answers = await burst()
      return answers.every((r) => r.status === 401) ? answers[0] : undefined
    }, 15_000)
    expect((await errorOf(refused!)).code).toBe("revoked_api_key")
    expect((await burst()).map((r) => r.status)).toEqual([401, 401, 401, 401, 401])
  })
})
