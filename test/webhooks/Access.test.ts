import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addMember, call, expectError, orgKey, pageThrough } from "../access/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { appendEvents, eventually, verified } from "./support.js"

let node: TestNode
let receiver: TargetServer
let db: pg.Pool
beforeAll(async () => {
  receiver = await startTargetServer((_request, response) => {
    response.writeHead(204)
    response.end()
  })
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_WEBHOOK_BACKOFF: "100ms",
    SWITCHYARD_WEBHOOK_TIMEOUT: "2 seconds",
    SWITCHYARD_WEBHOOK_MAX_ENDPOINTS: "5"
  })
  db = new pg.Pool({ connectionString: node.databaseUrl, max: 2 })
})
afterAll(async () => {
  await db?.end()
  await node?.stop()
  await receiver?.close()
})

const at = (path: string) => receiver.requests.filter((r) => r.path === path)

describe("webhooks: who may, and what is refused", () => {
  it("Admins and above manage webhooks; Builders, Members and agent-limited keys get 403", async () => {
    const org = await node.bootstrap()
    const admin = await addMember(node, org.api_key, "admin")
    const builder = await addMember(node, org.api_key, "builder")
    const member = await addMember(node, org.api_key, "member")
    const agent = await call(node, org.api_key, "POST", "/v1/agents", {
      name: "a",
      model: { provider: "scripted", script: [{ text: "hi" }] }
    })
    const limited = await call(node, org.api_key, "POST", "/v1/api-keys", {
      name: "limited",
      kind: "organization",
      role: "admin",
      agent_ids: [agent.body.id]
    })
    expect(limited.status).toBe(201)

    const created = await call(node, admin.key, "POST", "/v1/webhooks", { url: `${receiver.url}/roles` })
    expect(created.status).toBe(201)
    const id = created.body.id
    for (const key of [builder.key, member.key, limited.body.api_key]) {
      expectError(await call(node, key, "GET", "/v1/webhooks"), 403, "forbidden")
      expectError(await call(node, key, "POST", "/v1/webhooks", { url: `${receiver.url}/x` }), 403, "forbidden")
      expectError(await call(node, key, "GET", `/v1/webhooks/${id}`), 403, "forbidden")
      expectError(await call(node, key, "PATCH", `/v1/webhooks/${id}`, { enabled: false }), 403, "forbidden")
      expectError(await call(node, key, "DELETE", `/v1/webhooks/${id}`), 403, "forbidden")
      expectError(await call(node, key, "POST", `/v1/webhooks/${id}/rotate-secret`), 403, "forbidden")
      expectError(await call(node, key, "POST", `/v1/webhooks/${id}/ping`), 403, "forbidden")
      expectError(await call(node, key, "GET", `/v1/webhooks/${id}/deliveries`), 403, "forbidden")
    }
    // an organization key with the admin role may
    const orgAdmin = await orgKey(node, org.api_key, "admin")
    expect((await call(node, orgAdmin.key, "GET", `/v1/webhooks/${id}`)).status).toBe(200)

    // every change is in the audit log, the secret never
    const updated = await call(node, admin.key, "PATCH", `/v1/webhooks/${id}`, { description: "d", enabled: false })
    expect(updated.body).toMatchObject({ description: "d", enabled: false, disabled_reason: "manual" })
    await call(node, admin.key, "POST", `/v1/webhooks/${id}/rotate-secret`)
    expect((await call(node, admin.key, "DELETE", `/v1/webhooks/${id}`)).status).toBe(204)
    expectError(await call(node, admin.key, "GET", `/v1/webhooks/${id}`), 404, "not_found")
    const audit = await call(node, org.api_key, "GET", "/v1/audit-logs")
    const actions = audit.body.items.filter((e: any) => e.targets.some((t: any) => t.id === id)).map((e: any) =>
      e.action
    )
    expect(actions.sort()).toEqual(["CREATE_WEBHOOK", "DELETE_WEBHOOK", "ROTATE_WEBHOOK_SECRET", "UPDATE_WEBHOOK"])
    expect(JSON.stringify(audit.body)).not.toContain(created.body.secret.slice(6))
  })

  it("keeps organizations apart: another organization's webhook is 404, and it gets none of their events", async () => {
    const a = await node.bootstrap()
    const b = await node.bootstrap()
    const hookA = await call(node, a.api_key, "POST", "/v1/webhooks", {
      url: `${receiver.url}/org-a`,
      event_types: ["task.created"]
    })
    const hookB = await call(node, b.api_key, "POST", "/v1/webhooks", {
      url: `${receiver.url}/org-b`,
      event_types: ["task.created"]
    })
    const id = hookA.body.id
    expect((await call(node, b.api_key, "GET", "/v1/webhooks")).body.items.map((w: any) => w.id)).toEqual([
      hookB.body.id
    ])
    expectError(await call(node, b.api_key, "GET", `/v1/webhooks/${id}`), 404, "not_found")
    expectError(await call(node, b.api_key, "PATCH", `/v1/webhooks/${id}`, { enabled: false }), 404, "not_found")
    expectError(await call(node, b.api_key, "DELETE", `/v1/webhooks/${id}`), 404, "not_found")
    expectError(await call(node, b.api_key, "POST", `/v1/webhooks/${id}/rotate-secret`), 404, "not_found")
    expectError(await call(node, b.api_key, "POST", `/v1/webhooks/${id}/ping`), 404, "not_found")
    expectError(await call(node, b.api_key, "GET", `/v1/webhooks/${id}/deliveries`), 404, "not_found")

    await appendEvents(db, a.organization_id, 3, "task.created", "a")
    await appendEvents(db, b.organization_id, 2, "task.created", "b")
    await eventually(() => at("/org-a").length >= 3 && at("/org-b").length >= 2 ? true : undefined)
    await new Promise((r) => setTimeout(r, 300))
    const toA = at("/org-a").map((r) => verified(hookA.body.secret, r))
    const toB = at("/org-b").map((r) => verified(hookB.body.secret, r))
    expect(toA.map((p) => [p.organization_id, p.data.tag])).toEqual([1, 2, 3].map(() => [a.organization_id, "a"]))
    expect(toB.map((p) => [p.organization_id, p.data.tag])).toEqual([1, 2].map(() => [b.organization_id, "b"]))
    // a delivery of A is not B's to retry
    const deliveries = await call(node, a.api_key, "GET", `/v1/webhooks/${id}/deliveries`)
    const deliveryId = deliveries.body.items[0].id
    expectError(
      await call(node, b.api_key, "POST", `/v1/webhooks/${hookB.body.id}/deliveries/${deliveryId}/retry`),
      404,
      "not_found"
    )
  })

  it("refuses webhook URLs that reach internal addresses, at creation and at delivery", async () => {
    const org = await node.bootstrap()
    for (
      const url of [
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/hook",
        "http://[::1]:8080/hook",
        "http://192.168.1.1/hook",
        "http://100.100.100.200/"
      ]
    ) {
      const refused = await call(node, org.api_key, "POST", "/v1/webhooks", { url })
      expectError(refused, 422, "webhook_url_not_allowed")
      expect(refused.body.error.message).toMatch(/SWITCHYARD_EGRESS_ALLOW/)
    }
    const created = await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/ssrf` })
    expectError(
      await call(node, org.api_key, "PATCH", `/v1/webhooks/${created.body.id}`, { url: "http://10.1.2.3/x" }),
      422,
      "webhook_url_not_allowed"
    )
    // a URL that turns internal after the check (as DNS rebinding would) is refused where the connection is made
    await db.query("UPDATE webhooks SET url = 'http://10.255.255.1:9/x' WHERE id = $1", [created.body.id])
    const ping = await call(node, org.api_key, "POST", `/v1/webhooks/${created.body.id}/ping`)
    expect(ping.status).toBe(200)
    expect(ping.body.status).toBe("pending")
    expect(ping.body.attempts[0]).toMatchObject({ status_code: null, response_excerpt: null })
    expect(ping.body.attempts[0].error).toMatch(/10\.255\.255\.1.*private/)
    // enabling an endpoint whose URL is refused now (the egress policy changed since) is refused as creating it is
    await call(node, org.api_key, "PATCH", `/v1/webhooks/${created.body.id}`, { enabled: false })
    const enabling = await call(node, org.api_key, "PATCH", `/v1/webhooks/${created.body.id}`, { enabled: true })
    expectError(enabling, 422, "webhook_url_not_allowed")
    expect((await call(node, org.api_key, "GET", `/v1/webhooks/${created.body.id}`)).body.enabled).toBe(false)
    // enabled at once with an allowed URL, it is
    const fixed = await call(node, org.api_key, "PATCH", `/v1/webhooks/${created.body.id}`, {
      enabled: true,
      url: `${receiver.url}/ssrf`
    })
    expect(fixed.body).toMatchObject({ enabled: true, url: `${receiver.url}/ssrf` })
  })

  it("answers bad input with 400 and the error envelope", async () => {
    const org = await node.bootstrap()
    const bad = [
      { url: "not a url" },
      { url: "ftp://example.com/x" },
      { url: "https://user:pw@example.com/x" },
      // stored as typed, these would not be where deliveries go: refused rather than kept
      { url: ` ${receiver.url}/x ` },
      { url: "http:///example.com/x" },
      { url: `${receiver.url}/x`, event_types: ["task.nope"] },
      { url: `${receiver.url}/x`, enabled: "yes" },
      { url: `${receiver.url}/x`, description: "d".repeat(501) },
      {}
    ]
    for (const body of bad) {
      const r = await call(node, org.api_key, "POST", "/v1/webhooks", body)
      expectError(r, 400, "validation_failed")
    }
    // a field over its limit says the limit, not the field's documentation
    for (
      const [body, said] of [
        [{ url: `${receiver.url}/x`, description: "d".repeat(501) }, "at most 500 character(s)"],
        [{ url: `${receiver.url}/x`, event_types: Array(51).fill("task.completed") }, "at most 50 item(s)"]
      ] as const
    ) {
      const r = await call(node, org.api_key, "POST", "/v1/webhooks", body)
      expectError(r, 400, "validation_failed")
      expect(r.body.error.message).toContain(said)
    }
    expectError(await call(node, org.api_key, "GET", "/v1/webhooks/not-a-uuid"), 400, "validation_failed")
    const created = await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/x` })
    expectError(
      await call(node, org.api_key, "POST", `/v1/webhooks/${created.body.id}/deliveries/msg_nope/retry`),
      400,
      "validation_failed"
    )
    expectError(
      await call(
        node,
        org.api_key,
        "POST",
        `/v1/webhooks/${created.body.id}/deliveries/msg_${"0".repeat(32)}/retry`
      ),
      404,
      "not_found"
    )
    expectError(
      await call(node, org.api_key, "GET", `/v1/webhooks/${created.body.id}/deliveries?cursor=zzz`),
      400,
      "invalid_cursor"
    )
    expectError(
      await call(node, org.api_key, "GET", `/v1/webhooks/${created.body.id}/deliveries?limit=0`),
      400,
      "validation_failed"
    )
    expectError(
      await call(node, org.api_key, "GET", `/v1/webhooks/${crypto.randomUUID()}`),
      404,
      "not_found"
    )
  })

  it("a PATCH that changes nothing returns the endpoint as it is: not written, nothing audited", async () => {
    const org = await node.bootstrap()
    const created = await call(node, org.api_key, "POST", "/v1/webhooks", {
      url: `${receiver.url}/same`,
      event_types: ["task.completed"],
      description: "d"
    })
    expect(created.status).toBe(201)
    const { secret: _secret, ...hook } = created.body
    for (
      const body of [{}, { enabled: true }, { url: hook.url, description: "d", event_types: ["task.completed"] }]
    ) {
      const r = await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, body)
      expect(r.status, JSON.stringify(r.body)).toBe(200)
      expect(r.body).toEqual(hook)
    }
    const audited = async () =>
      (await call(node, org.api_key, "GET", "/v1/audit-logs")).body.items
        .filter((e: any) => e.targets.some((t: any) => t.id === hook.id)).map((e: any) => e.action)
    expect(await audited()).toEqual(["CREATE_WEBHOOK"])
    // a change is written and audited; disabling a disabled one again is nothing more
    const disabled = await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: false })
    expect(disabled.body).toMatchObject({ enabled: false, disabled_reason: "manual" })
    expect(Date.parse(disabled.body.updated_at)).toBeGreaterThan(Date.parse(hook.updated_at))
    const again = await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: false })
    expect(again.body).toEqual(disabled.body)
    expect((await audited()).sort()).toEqual(["CREATE_WEBHOOK", "UPDATE_WEBHOOK"])
  })

  it("a disable and a change of URL made together both hold: the endpoint is not enabled again", async () => {
    const org = await node.bootstrap()
    const created = await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/before` })
    expect(created.status).toBe(201)
    const id = created.body.id
    // the row is held meanwhile: both requests are in before either writes
    const client = await db.connect()
    let both: Promise<Array<Awaited<ReturnType<typeof call>>>>
    try {
      await client.query("BEGIN")
      await client.query("SELECT id FROM webhooks WHERE id = $1 FOR UPDATE", [id])
      both = Promise.all([
        call(node, org.api_key, "PATCH", `/v1/webhooks/${id}`, { enabled: false }),
        call(node, org.api_key, "PATCH", `/v1/webhooks/${id}`, { url: `${receiver.url}/after` })
      ])
      await eventually(
        async () =>
          (await db.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%webhooks%'"
            )).rows[0].n >= 2 || undefined,
        10_000,
        "both changes to wait on the endpoint's row"
      )
      await client.query("COMMIT")
    } finally {
      client.release()
    }
    expect((await both).map((r) => r.status)).toEqual([200, 200])
    const after = await call(node, org.api_key, "GET", `/v1/webhooks/${id}`)
    expect(after.body).toMatchObject({ url: `${receiver.url}/after`, enabled: false, disabled_reason: "manual" })
  })

  it("lists every endpoint at once, or pages them oldest first with limit and cursor", async () => {
    const org = await node.bootstrap()
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      ids.push((await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/page${i}` })).body.id)
    }
    // one written with microseconds (as by SQL), last on a page, is neither repeated nor skipped
    await db.query("UPDATE webhooks SET created_at = created_at + interval '123 microseconds' WHERE id = $1", [ids[1]])
    const all = await call(node, org.api_key, "GET", "/v1/webhooks")
    expect(Object.keys(all.body).sort()).toEqual(["items", "next_cursor", "total"])
    expect(all.body).toMatchObject({ total: 5, next_cursor: null })
    const order = all.body.items.map((w: any) => w.id)
    expect([...order].sort()).toEqual([...ids].sort())
    expect(await pageThrough(node, org.api_key, "/v1/webhooks", 2)).toEqual({ ids: order, totals: [5, 5, 5] })
    const member = await addMember(node, org.api_key, "member")
    expectError(await call(node, member.key, "GET", "/v1/webhooks?limit=2"), 403, "forbidden")
    expectError(await call(node, org.api_key, "GET", "/v1/webhooks?limit=0"), 400, "validation_failed")
    expectError(await call(node, org.api_key, "GET", "/v1/webhooks?cursor=zz"), 400, "invalid_cursor")
  })

  it("pages deliveries newest first with next_cursor", async () => {
    const org = await node.bootstrap()
    const created = await call(node, org.api_key, "POST", "/v1/webhooks", {
      url: `${receiver.url}/pages`,
      event_types: ["task.created"]
    })
    await appendEvents(db, org.organization_id, 7)
    await eventually(() => at("/pages").length >= 7 ? true : undefined)
    const seen =
      (await pageThrough(node, org.api_key, `/v1/webhooks/${created.body.id}/deliveries`, 3, (d) => d.event_id))
        .ids
    expect(seen).toHaveLength(7)
    expect(new Set(seen).size).toBe(7)
    expect([...seen].sort((x, y) => (BigInt(x) < BigInt(y) ? 1 : -1))).toEqual(seen)
  })

  it("limits the endpoints of an organization: past it 409 webhook_limit_reached, even with creates racing", async () => {
    const org = await node.bootstrap()
    const other = await node.bootstrap()
    const first = await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/cap0`, enabled: false })
    expect(first.status).toBe(201)
    // 12 at once for the 4 places left (a disabled endpoint takes one too)
    const raced = await Promise.all(
      Array.from(
        { length: 12 },
        (_, i) => call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/cap${i + 1}` })
      )
    )
    expect(raced.filter((r) => r.status === 201)).toHaveLength(4)
    const refused = raced.filter((r) => r.status !== 201)
    expect(refused).toHaveLength(8)
    for (const r of refused) {
      expectError(r, 409, "webhook_limit_reached")
      expect(r.body.error.details).toEqual({ limit: 5 })
      expect(r.body.error.message).toContain("SWITCHYARD_WEBHOOK_MAX_ENDPOINTS")
    }
    expect((await call(node, org.api_key, "GET", "/v1/webhooks")).body.total).toBe(5)
    // another organization is not affected; deleting one frees its place
    expect((await call(node, other.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/cap-other` })).status)
      .toBe(201)
    expect((await call(node, org.api_key, "DELETE", `/v1/webhooks/${first.body.id}`)).status).toBe(204)
    expect((await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/cap-again` })).status)
      .toBe(201)
    expectError(
      await call(node, org.api_key, "POST", "/v1/webhooks", { url: `${receiver.url}/cap-over` }),
      409,
      "webhook_limit_reached"
    )
    // nothing audited for a refused one
    const created = (await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=CREATE_WEBHOOK")).body.items
    expect(created).toHaveLength(6)
  })

  it("documents the webhook payloads in the OpenAPI document's webhooks section", async () => {
    const spec = await (await node.fetch("/openapi.json")).json()
    expect(Object.keys(spec.webhooks)).toContain("task.completed")
    expect(Object.keys(spec.webhooks)).toContain("webhook.ping")
    const body = spec.webhooks["task.completed"].post.requestBody.content["application/json"].schema
    expect(body.allOf.map((s: any) => s.$ref)).toEqual([
      "#/components/schemas/Event_task_completed",
      "#/components/schemas/WebhookEnvelope"
    ])
    for (const ref of body.allOf) expect(spec.components.schemas[ref.$ref.split("/").at(-1)]).toBeDefined()
    expect(spec.webhooks["task.completed"].post.parameters.map((p: any) => p.name)).toEqual([
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature"
    ])
    expect(spec.paths["/v1/webhooks/{webhook_id}/rotate-secret"].post).toBeDefined()
  })
})
