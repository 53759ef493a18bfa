import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type Cluster, startCluster } from "../support/ClusterHarness.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import { testEnvironment } from "../support/TestNode.js"
import { appendEvents, eventually, verified } from "./support.js"

let cluster: Cluster | undefined
let receiver: TargetServer | undefined
let db: pg.Pool | undefined
afterAll(async () => {
  await db?.end()
  await cluster?.stop()
  await receiver?.close()
})

describe("webhooks on three nodes, one SIGKILLed while it holds deliveries", () => {
  it("delivers every event; an event sent twice is sent under the same webhook-id", async () => {
    // a slow receiver, two requests at a time per node: the deliveries a node holds queue up behind it
    receiver = await startTargetServer(async (_request, response) => {
      await new Promise((r) => setTimeout(r, 20))
      response.writeHead(200)
      response.end("ok")
    })
    const env = await testEnvironment({
      DATABASE_URL: await migratedDatabase(),
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_WEBHOOK_TIMEOUT: "2 seconds",
      SWITCHYARD_WEBHOOK_BACKOFF: "200ms,500ms,1s,1s,1s,1s,1s,1s",
      SWITCHYARD_WEBHOOK_CONCURRENCY: "2",
      SWITCHYARD_SHARD_LOCK_EXPIRATION: "3 seconds",
      SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL: "1 second"
    })
    let apiKey: string, organizationId: string
    ;[cluster, { api_key: apiKey, organization_id: organizationId }] = await Promise.all([
      startCluster({ nodes: 3, env }),
      bootstrapOrg(env, "Hooks", "h@o.test")
    ])
    const created = await fetch(`${cluster.url}/v1/webhooks`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ url: `${receiver.url}/kill`, event_types: ["task.created"] })
    }).then((r) => r.json())
    expect(created.secret).toMatch(/^whsec_/)
    db = new pg.Pool({ connectionString: env.DATABASE_URL, max: 3 })

    // 200 events in 40 transactions, while the nodes deliver
    for (let i = 0; i < 40; i++) await appendEvents(db, organizationId, 5, "task.created", `k${i}`)

    // the victim: the node holding the most deliveries not yet made
    const held = async () => {
      const { rows } = await db!.query(
        `SELECT split_part(lease_owner, '/', 2)::int AS pid, count(*)::int AS n FROM webhook_deliveries
         WHERE status = 'pending' AND lease_until > now() GROUP BY 1 ORDER BY 2 DESC`
      )
      return rows as Array<{ pid: number; n: number }>
    }
    const [busiest] = await eventually(async () => {
      const rows = await held()
      return rows.length > 0 && rows[0]!.n >= 10 ? rows : undefined
    }, 20_000)
    const victim = cluster.nodes.find((n) => n.process.child.pid === busiest!.pid)!
    expect(victim).toBeDefined()
    await cluster.kill(victim.index)
    const stranded = (await held()).find((r) => r.pid === busiest!.pid)?.n ?? 0
    expect(stranded).toBeGreaterThan(0)

    // every event is delivered (the victim's after its leases run out), each under one webhook-id
    const { rows: events } = await db.query(
      "SELECT id::text AS id FROM events WHERE organization_id = $1 AND type = 'task.created'",
      [organizationId]
    )
    expect(events).toHaveLength(200)
    const expected = new Set(events.map((e) => e.id as string))
    await eventually(() => {
      const got = new Set(receiver!.requests.map((r) => JSON.parse(r.body.toString()).id))
      return [...expected].every((id) => got.has(id)) ? true : undefined
    }, 60_000)
    const idsByEvent = new Map<string, Set<string>>()
    const eventsById = new Map<string, Set<string>>()
    for (const r of receiver.requests) {
      const payload = verified(created.secret, r)
      const webhookId = String(r.headers["webhook-id"])
      idsByEvent.set(payload.id, (idsByEvent.get(payload.id) ?? new Set()).add(webhookId))
      eventsById.set(webhookId, (eventsById.get(webhookId) ?? new Set()).add(payload.id))
    }
    expect([...idsByEvent.keys()].sort()).toEqual([...expected].sort())
    for (const ids of idsByEvent.values()) expect(ids.size).toBe(1)
    for (const evs of eventsById.values()) expect(evs.size).toBe(1)
    const duplicates = receiver.requests.length - expected.size
    console.log(`webhook kill: ${stranded} deliveries stranded on the killed node, ${duplicates} sent twice`)

    // the receiver records a request before it answers, and a node marks its delivery once answered: the last
    // ones settle just after the receiver saw them (a check made at once found one still pending)
    const states = await eventually(async () => {
      const { rows } = await db!.query(
        "SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status"
      )
      return rows.some((r) => r.status === "pending") ? undefined : rows
    }, 20_000)
    expect(states).toEqual([{ status: "succeeded", n: 200 }])
  }, 180_000)
})
