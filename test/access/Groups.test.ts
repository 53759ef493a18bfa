import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { addMember, atOnce, auditEvents, call, expectError, scriptedAgent, uniqueEmail } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("groups", () => {
  it("creates, reads, changes and deletes a group with default agents", async () => {
    const org = await node.bootstrap()
    const agent = (await call(node, org.api_key, "POST", "/v1/agents", scriptedAgent())).body
    const created = await call(node, org.api_key, "POST", "/v1/groups", {
      name: "  Support  ",
      description: "First line",
      default_role: "member",
      agent_ids: [agent.id, agent.id]
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      name: "Support",
      description: "First line",
      default_role: "member",
      agent_ids: [agent.id],
      member_count: 0
    })
    const id = created.body.id
    const changed = await call(node, org.api_key, "PATCH", `/v1/groups/${id}`, { default_role: null, agent_ids: [] })
    expect(changed.body).toMatchObject({ name: "Support", default_role: null, agent_ids: [] })
    expectError(await call(node, org.api_key, "POST", "/v1/groups", { name: "support" }), 409, "group_name_taken")
    const other = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Other" })).body
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/groups/${other.id}`, { name: "SUPPORT" }),
      409,
      "group_name_taken"
    )
    expect((await call(node, org.api_key, "DELETE", `/v1/groups/${id}`)).status).toBe(204)
    expectError(await call(node, org.api_key, "GET", `/v1/groups/${id}`), 404, "not_found")
    expectError(await call(node, org.api_key, "DELETE", `/v1/groups/${id}`), 404, "not_found")
  })

  it("is in the OpenAPI document, with the audit log and member role endpoints", async () => {
    const doc = await (await node.fetch("/openapi.json")).json()
    for (
      const path of ["/v1/groups", "/v1/groups/{group_id}/members/{user_id}", "/v1/audit-logs", "/v1/audit-logs/export"]
    ) {
      expect(Object.keys(doc.paths)).toContain(path)
    }
    expect(Object.keys(doc.paths["/v1/members/{user_id}"]).sort()).toEqual(["delete", "patch"])
  })

  it("answers bad input with 400 naming the field", async () => {
    const org = await node.bootstrap()
    const bad = await call(node, org.api_key, "POST", "/v1/groups", { name: "", default_role: "wizard" })
    expectError(bad, 400, "validation_failed")
    expect(new Set(bad.body.error.details.issues.map((i: any) => i.path))).toEqual(new Set(["default_role", "name"]))
    expectError(await call(node, org.api_key, "GET", "/v1/groups/not-a-uuid"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/groups?cursor=zzz"), 400, "invalid_cursor")
    expectError(
      await call(node, org.api_key, "POST", "/v1/groups", { name: "x", agent_ids: ["nope"] }),
      400,
      "validation_failed"
    )
    expectError(
      await call(node, org.api_key, "POST", "/v1/groups", {
        name: "x",
        agent_ids: ["00000000-0000-4000-8000-000000000000"]
      }),
      400,
      "unknown_agent"
    )
    const group = (await call(node, org.api_key, "POST", "/v1/groups", { name: "G" })).body
    expectError(await call(node, org.api_key, "POST", `/v1/groups/${group.id}/members`, {}), 400, "validation_failed")
  })

  it("pages groups and members with a cursor", async () => {
    const org = await node.bootstrap()
    for (let i = 0; i < 5; i++) await call(node, org.api_key, "POST", "/v1/groups", { name: `G${i}` })
    const names: Array<string> = []
    let cursor: string | null = null
    do {
      const page: any = await call(node, org.api_key, "GET", `/v1/groups?limit=2${cursor ? `&cursor=${cursor}` : ""}`)
      expect(page.body.items.length).toBeLessThanOrEqual(2)
      names.push(...page.body.items.map((g: any) => g.name))
      cursor = page.body.next_cursor
    } while (cursor !== null)
    expect(names).toEqual(["G0", "G1", "G2", "G3", "G4"])

    const group = (await call(node, org.api_key, "GET", "/v1/groups?limit=1")).body.items[0]
    const emails: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const email = uniqueEmail()
      emails.push(email)
      expect((await call(node, org.api_key, "POST", `/v1/groups/${group.id}/members`, { email })).status).toBe(201)
    }
    const first = await call(node, org.api_key, "GET", `/v1/groups/${group.id}/members?limit=2`)
    const second = await call(
      node,
      org.api_key,
      "GET",
      `/v1/groups/${group.id}/members?cursor=${first.body.next_cursor}`
    )
    expect([...first.body.items, ...second.body.items].map((m: any) => m.user.email)).toEqual(emails)
    expect(second.body.next_cursor).toBeNull()
  })

  it("applies a higher default role to members added through the group, never a lower one", async () => {
    const org = await node.bootstrap()
    const builders =
      (await call(node, org.api_key, "POST", "/v1/groups", { name: "Builders", default_role: "builder" }))
        .body
    const member = await addMember(node, org.api_key, "member")
    const admin = await addMember(node, org.api_key, "admin")
    expect(
      (await call(node, org.api_key, "POST", `/v1/groups/${builders.id}/members`, { user_id: member.userId })).body.role
    )
      .toBe("builder")
    expect(
      (await call(node, org.api_key, "POST", `/v1/groups/${builders.id}/members`, { user_id: admin.userId })).body.role
    )
      .toBe("admin")
    // the raised role works at once: the member may now create agents
    expect((await call(node, member.key, "POST", "/v1/agents", scriptedAgent())).status).toBe(201)
    // a new person by e-mail joins the organization with the group's role
    const person = await call(node, org.api_key, "POST", `/v1/groups/${builders.id}/members`, { email: uniqueEmail() })
    expect(person.body.role).toBe("builder")
    expectError(
      await call(node, org.api_key, "POST", `/v1/groups/${builders.id}/members`, { user_id: member.userId }),
      409,
      "already_in_group"
    )
    // leaving the group keeps the role; leaving the organization leaves the group
    expect((await call(node, org.api_key, "DELETE", `/v1/groups/${builders.id}/members/${member.userId}`)).status).toBe(
      204
    )
    const members = await call(node, org.api_key, "GET", "/v1/members")
    expect(members.body.items.find((m: any) => m.user.id === member.userId).role).toBe("builder")
    expect((await call(node, org.api_key, "DELETE", `/v1/members/${admin.userId}`)).status).toBe(204)
    const left = await call(node, org.api_key, "GET", `/v1/groups/${builders.id}`)
    expect(left.body.member_count).toBe(1)
  })

  it("refuses a default role above the caller's, and raising a member past it", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    expectError(
      await call(node, admin.key, "POST", "/v1/groups", { name: "Owners", default_role: "super_admin" }),
      403,
      "forbidden"
    )
    const owners =
      (await call(node, org.api_key, "POST", "/v1/groups", { name: "Owners", default_role: "super_admin" }))
        .body
    const member = await addMember(node, org.api_key, "member")
    expectError(
      await call(node, admin.key, "POST", `/v1/groups/${owners.id}/members`, { user_id: member.userId }),
      403,
      "forbidden"
    )
    const members = await call(node, org.api_key, "GET", `/v1/groups/${owners.id}/members`)
    expect(members.body.items).toEqual([])
  })
})

describe("changes of a group", () => {
  it("two PATCHes at once both hold: neither is lost to the other", async () => {
    const org = await node.bootstrap()
    const group = (await call(node, org.api_key, "POST", "/v1/groups", { name: "Before", default_role: "member" }))
      .body
    const [renamed, described] = await atOnce(node, "groups", group.id, [
      () => call(node, org.api_key, "PATCH", `/v1/groups/${group.id}`, { name: "After" }),
      () => call(node, org.api_key, "PATCH", `/v1/groups/${group.id}`, { description: "Second line" })
    ])
    expect([renamed.status, described.status]).toEqual([200, 200])
    const after = await call(node, org.api_key, "GET", `/v1/groups/${group.id}`)
    expect(after.body).toMatchObject({ name: "After", description: "Second line", default_role: "member" })
  })

  it("a PATCH that changes nothing writes nothing and audits nothing", async () => {
    const org = await node.bootstrap()
    const agent = (await call(node, org.api_key, "POST", "/v1/agents", scriptedAgent())).body
    const group = (await call(node, org.api_key, "POST", "/v1/groups", {
      name: "Same",
      description: "Kept",
      default_role: "member",
      agent_ids: [agent.id]
    })).body
    for (const body of [{}, { name: "Same", description: "Kept", default_role: "member", agent_ids: [agent.id] }]) {
      const r = await call(node, org.api_key, "PATCH", `/v1/groups/${group.id}`, body)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body.updated_at).toBe(group.updated_at)
    }
    const actions = (await auditEvents(node, org.organization_id)).map((e) => e.action)
    expect(actions).not.toContain("UPDATE_GROUP")
  })
})
