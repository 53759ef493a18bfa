import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, makeWorld, uniqueEmail, withDatabase } from "../access/support.js"
import { petstore } from "../connectors/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

/** The records a step added, in order. */
const recordsOf = async (organizationId: string, step: () => Promise<unknown>) => {
  const before = (await auditEvents(node, organizationId)).length
  await step()
  return (await auditEvents(node, organizationId)).slice(before)
}

const ok = async (
  org: { api_key: string },
  method: string,
  path: string,
  body?: unknown
) => {
  const r = await call(node, org.api_key, method, path, body)
  expect(r.status, JSON.stringify(r.body)).toBeLessThan(300)
  return r
}

describe("audit completeness", () => {
  it("records each change exactly once, with actor, targets and request metadata", async () => {
    const org = await node.bootstrap()
    const orgId = org.organization_id
    const first = await auditEvents(node, orgId)
    expect(first.map((e) => e.action)).toEqual(["CREATE_ORGANIZATION"])
    expect(first[0]).toMatchObject({ actor_type: "system", actor_id: "bootstrap", outcome: "success" })

    const steps: Array<[string, () => Promise<{ headers: Headers; body?: any }>]> = []
    let memberId = ""
    let keyId = ""
    let groupId = ""
    let agentId = ""
    let connectorId = ""
    let connectionId = ""
    steps.push(["ADD_MEMBER", async () => {
      const r = await ok(org, "POST", "/v1/members", { email: uniqueEmail(), role: "member" })
      memberId = r.body.user.id
      return r
    }])
    steps.push(["UPDATE_MEMBER_ROLE", () => ok(org, "PATCH", `/v1/members/${memberId}`, { role: "builder" })])
    steps.push(["CREATE_API_KEY", async () => {
      const r = await ok(org, "POST", "/v1/api-keys", { name: "ci", kind: "organization" })
      keyId = r.body.id
      return r
    }])
    steps.push(["REVOKE_API_KEY", () => ok(org, "DELETE", `/v1/api-keys/${keyId}`)])
    steps.push(["CREATE_GROUP", async () => {
      const r = await ok(org, "POST", "/v1/groups", { name: "Ops" })
      groupId = r.body.id
      return r
    }])
    steps.push(["UPDATE_GROUP", () => ok(org, "PATCH", `/v1/groups/${groupId}`, { description: "on call" })])
    steps.push(["ADD_GROUP_MEMBER", () => ok(org, "POST", `/v1/groups/${groupId}/members`, { user_id: memberId })])
    steps.push([
      "REMOVE_GROUP_MEMBER",
      () => ok(org, "DELETE", `/v1/groups/${groupId}/members/${memberId}`)
    ])
    steps.push(["DELETE_GROUP", () => ok(org, "DELETE", `/v1/groups/${groupId}`)])
    steps.push(["CREATE_AGENT", async () => {
      const r = await ok(org, "POST", "/v1/agents", {
        name: "A",
        model: { provider: "scripted", script: [{ text: "x" }] }
      })
      agentId = r.body.id
      return r
    }])
    steps.push(["UPDATE_AGENT", () => ok(org, "PATCH", `/v1/agents/${agentId}`, { instructions: "be brief" })])
    steps.push(["DELETE_AGENT", () => ok(org, "DELETE", `/v1/agents/${agentId}`)])
    steps.push(["CREATE_CONNECTOR", async () => {
      const r = await ok(org, "POST", "/v1/tools/connectors", { spec: petstore("https://pets.example.com") })
      connectorId = r.body.id
      return r
    }])
    steps.push([
      "UPDATE_CONNECTOR",
      () => ok(org, "PUT", `/v1/tools/connectors/${connectorId}`, { spec: petstore("https://pets2.example.com") })
    ])
    steps.push(["CREATE_CONNECTION", async () => {
      const r = await ok(org, "POST", `/v1/tools/connectors/${connectorId}/connections`, {
        name: "c",
        credentials: { type: "api_key", value: "k" }
      })
      connectionId = r.body.id
      return r
    }])
    steps.push([
      "UPDATE_CONNECTION",
      () => ok(org, "PATCH", `/v1/tools/connectors/${connectorId}/connections/${connectionId}`, { name: "d" })
    ])
    steps.push([
      "DELETE_CONNECTION",
      () => ok(org, "DELETE", `/v1/tools/connectors/${connectorId}/connections/${connectionId}`)
    ])
    steps.push(["ARCHIVE_CONNECTOR", () => ok(org, "DELETE", `/v1/tools/connectors/${connectorId}`)])
    steps.push(["REMOVE_MEMBER", () => ok(org, "DELETE", `/v1/members/${memberId}`)])

    for (const [action, step] of steps) {
      let response: { headers: Headers } | undefined
      const added = await recordsOf(orgId, async () => (response = await step()))
      expect(added.map((e) => e.action), action).toEqual([action])
      expect(added[0]).toMatchObject({
        outcome: "success",
        actor_type: "user",
        actor_id: org.user_id,
        actor_key_id: org.api_key.slice(3, 15),
        ip: expect.stringMatching(/127\.0\.0\.1/),
        user_agent: expect.any(String),
        request_id: response!.headers.get("x-request-id")
      })
      expect(added[0].targets.length).toBeGreaterThan(0)
    }
    // repeating a no-op changes nothing and records nothing
    const again = await recordsOf(orgId, () => ok(org, "DELETE", `/v1/api-keys/${keyId}`))
    expect(again).toEqual([])
  })

  it("records the role change and the group join of a member added through a group", async () => {
    const org = await node.bootstrap()
    const group = (await ok(org, "POST", "/v1/groups", { name: "Builders", default_role: "builder" })).body
    const added = await recordsOf(
      org.organization_id,
      () => ok(org, "POST", `/v1/groups/${group.id}/members`, { email: uniqueEmail() })
    )
    expect(added.map((e) => e.action)).toEqual(["ADD_MEMBER", "ADD_GROUP_MEMBER"])
    expect(added[0].details).toMatchObject({ role: "builder", group_id: group.id })
    const member = await addMember(node, org.api_key, "member")
    const raised = await recordsOf(
      org.organization_id,
      () => ok(org, "POST", `/v1/groups/${group.id}/members`, { user_id: member.userId })
    )
    expect(raised.map((e) => e.action)).toEqual(["UPDATE_MEMBER_ROLE", "ADD_GROUP_MEMBER"])
    expect(raised[0].details).toMatchObject({ from: "member", to: "builder" })
  })

  it("an update that gives no field changes nothing and records nothing", async () => {
    const { admin, agent, group, org } = await makeWorld(node)
    for (const path of [`/v1/agents/${agent.id}`, `/v1/groups/${group.id}`]) {
      const records = await recordsOf(org.organization_id, () => ok({ api_key: admin }, "PATCH", path, {}))
      expect(records, path).toEqual([])
    }
  })

  it("a refused or failed change leaves no change and no record", async () => {
    const world = await makeWorld(node)
    const orgId = world.org.organization_id
    const taken = await recordsOf(orgId, async () => {
      expectError(
        await call(node, world.admin, "POST", "/v1/groups", { name: world.group.name }),
        409,
        "group_name_taken"
      )
      expectError(
        await call(node, world.admin, "POST", `/v1/groups/${world.group.id}/members`, { user_id: world.person.userId }),
        409,
        "already_in_group"
      )
      expectError(
        await call(node, world.admin, "PATCH", `/v1/members/${world.org.user_id}`, { role: "admin" }),
        409,
        "last_super_admin"
      )
    })
    expect(taken).toEqual([])
  })

  it("a change whose record cannot be written is not made (one transaction)", async () => {
    const world = await makeWorld(node)
    // the database refuses this one record; the change must go with it
    await withDatabase(node, (db) =>
      db.query(`
        CREATE OR REPLACE FUNCTION refuse_audit() RETURNS trigger AS $$
        BEGIN
          IF NEW.targets::text LIKE '%refuse-me%' THEN RAISE EXCEPTION 'refused by test'; END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit();`))
    try {
      const group = await call(node, world.admin, "POST", "/v1/groups", { name: "refuse-me" })
      expectError(group, 500, "internal_error")
      const agent = await call(node, world.admin, "POST", "/v1/agents", {
        name: "refuse-me",
        model: { provider: "scripted", script: [{ text: "x" }] }
      })
      expectError(agent, 500, "internal_error")
      const connection = await call(
        node,
        world.admin,
        "PATCH",
        `/v1/tools/connectors/${world.connector.id}/connections/${world.connection.id}`,
        {
          name: "refuse-me"
        }
      )
      expectError(connection, 500, "internal_error")
      const groups = await call(node, world.admin, "GET", "/v1/groups")
      expect(groups.body.items.map((g: any) => g.name)).not.toContain("refuse-me")
      const agents = await call(node, world.admin, "GET", "/v1/agents")
      expect(agents.body.items.map((a: any) => a.name)).not.toContain("refuse-me")
      const conn = await call(
        node,
        world.admin,
        "GET",
        `/v1/tools/connectors/${world.connector.id}/connections/${world.connection.id}`
      )
      expect(conn.body.name).toBe("pets")
    } finally {
      await withDatabase(node, (db) => db.query("DROP TRIGGER refuse_audit ON audit_events"))
    }
  })

  it("records refused authentication when the key names its organization, and only then", async () => {
    const org = await node.bootstrap()
    const forged = org.api_key.slice(0, 16) + "A".repeat(43)
    const countAll = () =>
      withDatabase(node, async (db) => (await db.query("SELECT count(*)::int AS n FROM audit_events")).rows[0].n)
    const added = await recordsOf(org.organization_id, async () => {
      const r = await call(node, forged, "GET", "/v1/me")
      expectError(r, 401, "invalid_api_key")
    })
    expect(added).toHaveLength(1)
    expect(added[0]).toMatchObject({
      action: "AUTHENTICATION_FAILED",
      outcome: "denied",
      actor_type: "api_key",
      actor_id: org.api_key.slice(3, 15),
      targets: [{ type: "route", id: "GET /v1/me" }],
      details: { code: "invalid_api_key" }
    })
    // unknown and malformed keys name no organization: nothing is recorded anywhere
    const before = await countAll()
    expectError(await call(node, `sy_zzzzzzzzzzzz_${"a".repeat(43)}`, "GET", "/v1/me"), 401, "invalid_api_key")
    expectError(await call(node, "nonsense", "GET", "/v1/me"), 401, "malformed_api_key")
    expect(await countAll()).toBe(before)
  })

  it("keeps one unbroken chain under concurrent changes", async () => {
    const org = await node.bootstrap()
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => ok(org, "POST", "/v1/groups", { name: `Concurrent ${i}` }))
    )
    const events = await auditEvents(node, org.organization_id)
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1))
    expect(events.filter((e) => e.action === "CREATE_GROUP")).toHaveLength(20)
  })
})

describe("members", () => {
  it("lets only a Super admin grant or remove Super admin, and never removes the last one", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    const other = await addMember(node, org.api_key, "member")
    // an admin promotes up to admin, not to super admin, and cannot touch a super admin
    expect((await call(node, admin.key, "PATCH", `/v1/members/${other.userId}`, { role: "admin" })).body.role).toBe(
      "admin"
    )
    expectError(
      await call(node, admin.key, "PATCH", `/v1/members/${other.userId}`, { role: "super_admin" }),
      403,
      "forbidden"
    )
    expectError(await call(node, admin.key, "DELETE", `/v1/members/${org.user_id}`), 403, "forbidden")
    // the super admin promotes another, then may step down; the new one cannot leave alone
    expect((await call(node, org.api_key, "PATCH", `/v1/members/${other.userId}`, { role: "super_admin" })).status)
      .toBe(200)
    expect((await call(node, org.api_key, "PATCH", `/v1/members/${org.user_id}`, { role: "admin" })).body.role).toBe(
      "admin"
    )
    expectError(await call(node, other.key, "DELETE", `/v1/members/${other.userId}`), 409, "last_super_admin")
    expectError(
      await call(node, other.key, "PATCH", `/v1/members/${other.userId}`, { role: "member" }),
      409,
      "last_super_admin"
    )
    // a role change applies to the member's key at once
    const me = await call(node, other.key, "GET", "/v1/me")
    expect(me.body.role).toBe("super_admin")
    // removal revokes their keys
    expect((await call(node, other.key, "DELETE", `/v1/members/${admin.userId}`)).status).toBe(204)
    expectError(await call(node, admin.key, "GET", "/v1/me"), 401, "revoked_api_key")
    expectError(
      await call(node, other.key, "PATCH", `/v1/members/${admin.userId}`, { role: "member" }),
      404,
      "not_found"
    )
    expectError(
      await call(node, other.key, "PATCH", `/v1/members/${org.user_id}`, { role: "wizard" }),
      400,
      "validation_failed"
    )
  })
})

describe("behind a load balancer", () => {
  it("takes the caller's IP from the last X-Forwarded-For hop with SWITCHYARD_TRUST_PROXY=true", async () => {
    const proxied = await startTestNode({ SWITCHYARD_TRUST_PROXY: "true" })
    try {
      const org = await proxied.bootstrap()
      const response = await proxied.fetch("/v1/groups", {
        method: "POST",
        apiKey: org.api_key,
        headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.9, 198.51.100.7" },
        body: JSON.stringify({ name: "Edge" })
      })
      expect(response.status).toBe(201)
      const [event] = (await auditEvents(proxied, org.organization_id)).filter((e) => e.action === "CREATE_GROUP")
      expect(event.ip).toBe("198.51.100.7")
    } finally {
      await proxied.stop()
    }
    // by default the header is not believed
    const org = await node.bootstrap()
    await node.fetch("/v1/groups", {
      method: "POST",
      apiKey: org.api_key,
      headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.9" },
      body: JSON.stringify({ name: "Direct" })
    })
    const [event] = (await auditEvents(node, org.organization_id)).filter((e) => e.action === "CREATE_GROUP")
    expect(event.ip).not.toContain("203.0.113.9")
  })
})
