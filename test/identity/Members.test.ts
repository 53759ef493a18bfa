import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, auditEvents, call, expectError, pageThrough, uniqueEmail, withDatabase } from "../access/support.js"
import { initialize, mcpPost, obtainTokens, openSession, PASSWORD, setPassword, token } from "../mcp/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("members", () => {
  it("adding one new person twice at once makes one member and one 409, never a 500", async () => {
    const { api_key: adminKey } = await node.bootstrap()
    for (let round = 0; round < 5; round++) {
      const email = uniqueEmail("twice")
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => call(node, adminKey, "POST", "/v1/members", { email, role: "member" }))
      )
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409])
      const ids = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.user.id))
      expect(ids.size).toBe(1)
    }
  })

  it("an Admin sees and revokes a member's MCP authorizations; a Member sees only their own", async () => {
    const { api_key: adminKey, organization_id, user_id: ownerId } = await node.bootstrap()
    const member = async (role: string) => {
      const email = uniqueEmail(role)
      const added = await call(node, adminKey, "POST", "/v1/members", { email, role })
      await setPassword(node, email, PASSWORD)
      const key = await call(node, adminKey, "POST", "/v1/api-keys", { name: role, user_id: added.body.user.id })
      return { id: added.body.user.id as string, email, key: key.body.api_key as string }
    }
    const [alice, bob, admin] = [await member("member"), await member("member"), await member("admin")]
    const { tokens } = await obtainTokens(node, alice.email)
    const mcp = () => mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${tokens.access_token}` })
    expect((await mcp()).status).toBe(200)

    const listed = await call(node, admin.key, "GET", `/v1/oauth/authorizations?user_id=${alice.id}`)
    expect(listed.status, JSON.stringify(listed.body)).toBe(200)
    expect(listed.body.items).toEqual([expect.objectContaining({ user_id: alice.id, revoked_at: null })])
    const grantId = listed.body.items[0].id
    // another Member neither lists nor revokes it (not found for them), and an Admin does not manage a Super admin's
    expect((await call(node, bob.key, "GET", `/v1/oauth/authorizations?user_id=${alice.id}`)).status).toBe(403)
    expect((await call(node, bob.key, "DELETE", `/v1/oauth/authorizations/${grantId}`)).status).toBe(404)
    expect((await call(node, admin.key, "GET", `/v1/oauth/authorizations?user_id=${ownerId}`)).status).toBe(403)

    const revocations = async () =>
      (await auditEvents(node, organization_id)).filter((e) => e.action === "REVOKE_AUTHORIZATION")
    // the client's first exchange of its code was recorded as Alice authorizing it
    const created = (await auditEvents(node, organization_id)).filter((e) => e.action === "CREATE_AUTHORIZATION")
    expect(created).toEqual([expect.objectContaining({
      actor_type: "user",
      actor_id: alice.id,
      targets: [expect.objectContaining({ type: "oauth_authorization", id: grantId })],
      details: expect.objectContaining({
        client_id: listed.body.items[0].client_id,
        scopes: listed.body.items[0].scopes
      })
    })])
    const revoked = await call(node, admin.key, "DELETE", `/v1/oauth/authorizations/${grantId}`)
    expect(revoked.status).toBe(200)
    expect(revoked.body.revoked_at).not.toBeNull()
    expect((await mcp()).status).toBe(401)
    // audited once, as the Admin who did it; revoking it again changes nothing and records nothing
    expect(await revocations()).toEqual([expect.objectContaining({
      actor_type: "user",
      actor_id: admin.id,
      outcome: "success",
      targets: [expect.objectContaining({ type: "oauth_authorization", id: grantId })],
      details: { user_id: alice.id, client_id: listed.body.items[0].client_id },
      request_id: revoked.headers.get("x-request-id")
    })])
    expect((await call(node, admin.key, "DELETE", `/v1/oauth/authorizations/${grantId}`)).status).toBe(200)
    expect(await revocations()).toHaveLength(1)
    // Alice's own list shows it revoked
    expect((await call(node, alice.key, "GET", "/v1/oauth/authorizations")).body.items[0].revoked_at).not.toBeNull()
  })

  it("lists every member at once, or pages them oldest first with limit and cursor", async () => {
    const org = await node.bootstrap()
    const added: Array<string> = []
    for (let i = 0; i < 4; i++) added.push((await addMember(node, org.api_key, "member")).userId)
    // one written with microseconds (as by SQL), last on a page, is neither repeated nor skipped
    await withDatabase(node, (db) =>
      db.query(
        "UPDATE memberships SET created_at = created_at + interval '123 microseconds' WHERE user_id = $1",
        [added[1]]
      ))
    const all = await call(node, org.api_key, "GET", "/v1/members")
    expect(Object.keys(all.body).sort()).toEqual(["items", "next_cursor", "total"])
    expect(all.body).toMatchObject({ total: 5, next_cursor: null })
    const byAge = (await withDatabase(node, (db) =>
      db.query(
        "SELECT user_id FROM memberships WHERE organization_id = $1 " +
          "ORDER BY date_trunc('milliseconds', created_at), user_id",
        [org.organization_id]
      ))).rows.map((r) => r.user_id)
    expect([...all.body.items.map((m: any) => m.user.id)].sort()).toEqual([...byAge].sort())
    const paged = await pageThrough(node, org.api_key, "/v1/members", 2, (m) => m.user.id)
    expect(paged).toEqual({ ids: byAge, totals: [5, 5, 5] })
    expectError(await call(node, org.api_key, "GET", "/v1/members?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/members?cursor=zz"), 400, "invalid_cursor")
  })

  it("removing a member revokes their MCP authorizations at once; adding them back revives none", async () => {
    const { api_key: adminKey, organization_id } = await node.bootstrap()
    const email = uniqueEmail("mcp")
    const added = await call(node, adminKey, "POST", "/v1/members", { email, role: "member" })
    await setPassword(node, email, PASSWORD)
    const { client, tokens } = await obtainTokens(node, email)
    const mcp = () => mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${tokens.access_token}` })
    // the token works, and is in this node's cache from here on
    expect((await mcp()).status).toBe(200)

    expect((await call(node, adminKey, "DELETE", `/v1/members/${added.body.user.id}`)).status).toBe(204)
    expect((await mcp()).status).toBe(401)
    const [removal] = (await auditEvents(node, organization_id)).filter((e) => e.action === "REMOVE_MEMBER")
    expect(removal.details.revoked_authorizations).toHaveLength(1)

    expect((await call(node, adminKey, "POST", "/v1/members", { email, role: "member" })).status).toBe(201)
    expect((await mcp()).status).toBe(401)
    const refreshed = await token(node, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id
    })
    expect(refreshed.body.error).toBe("invalid_grant")
  })

  it("a demotion applies to the member's MCP tokens at once on the node that made it, as to their keys", async () => {
    const { api_key: adminKey } = await node.bootstrap()
    const email = uniqueEmail("demoted")
    const added = await call(node, adminKey, "POST", "/v1/members", { email, role: "admin" })
    await setPassword(node, email, PASSWORD)
    const access = (await obtainTokens(node, email)).tokens.access_token
    const session = await openSession(node.baseUrl, access)
    const listApprovals = async () =>
      (await (await mcpPost(
        node.baseUrl,
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_approvals", arguments: {} } },
        { authorization: `Bearer ${access}`, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
      )).json()).result
    // an Admin's call: the token is cached with that role from here on
    expect((await listApprovals()).isError).not.toBe(true)
    expect((await call(node, adminKey, "PATCH", `/v1/members/${added.body.user.id}`, { role: "member" })).status)
      .toBe(200)
    const refused = await listApprovals()
    expect(refused.isError).toBe(true)
    expect(JSON.stringify(refused.structuredContent ?? refused.content)).toContain("forbidden")
  })
})
