import { Schema } from "effect"
import type { ServerResponse } from "node:http"
import pg from "pg"
import { Webhook as Verifier } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Event } from "../../schema/Events.js"
import { addMember, call } from "../access/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { appendEvents, eventually, headersOf, verified } from "./support.js"

let node: TestNode
let receiver: TargetServer
let db: pg.Pool
/** How the receiver answers each path; 200 otherwise. */
const answers = new Map<string, (n: number) => number>()
const seen = new Map<string, number>()
/** Paths answered otherwise than with a status and a short text. */
const replies = new Map<string, (response: ServerResponse) => void | Promise<void>>()

beforeAll(async () => {
  receiver = await startTargetServer((request, response) => {
    const n = (seen.get(request.path) ?? 0) + 1
    seen.set(request.path, n)
    const reply = replies.get(request.path)
    if (reply !== undefined) return reply(response)
    const status = answers.get(request.path)?.(n) ?? 200
    response.writeHead(status, { "content-type": "text/plain" })
    response.end(`answer ${n} to ${request.path}`)
  })
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_WEBHOOK_BACKOFF: "100ms,200ms",
    SWITCHYARD_WEBHOOK_TIMEOUT: "2 seconds"
  })
  db = new pg.Pool({ connectionString: node.databaseUrl, max: 2 })
})
afterAll(async () => {
  await db?.end()
  await node?.stop()
  await receiver?.close()
})

const at = (path: string) => receiver.requests.filter((r) => r.path === path)

const createWebhook = async (apiKey: string, path: string, extra: Record<string, unknown> = {}) => {
  const created = await call(node, apiKey, "POST", "/v1/webhooks", {
    url: `${receiver.url}${path}`,
    event_types: ["task.created"],
    ...extra
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  return created.body as { id: string; secret: string; [k: string]: unknown }
}

describe("webhook deliveries", () => {
  it("delivers each event once, in order, signed so that the standardwebhooks library verifies it", async () => {
    const org = await node.bootstrap()
    const hook = await createWebhook(org.api_key, "/signed", { description: "signed" })
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(hook.secret.slice(6), "base64").length).toBeGreaterThanOrEqual(24)
    expect(hook).toMatchObject({ enabled: true, disabled_reason: null, event_types: ["task.created"] })

    await appendEvents(db, org.organization_id, 5, "task.created", "a")
    await appendEvents(db, org.organization_id, 3, "task.started", "filtered out")
    await appendEvents(db, org.organization_id, 5, "task.created", "b")
    const received = await eventually(() => at("/signed").length >= 10 ? at("/signed") : undefined)
    await new Promise((r) => setTimeout(r, 300))
    expect(at("/signed").length).toBe(10)

    const payloads = received.map((r) => verified(hook.secret, r))
    // in the log's order (by id), the events of the endpoint's types, each once
    const inOrder = [...payloads].sort((x, y) => (BigInt(x.id) < BigInt(y.id) ? -1 : 1))
    expect(inOrder.map((p) => `${p.data.tag}${p.data.n}`)).toEqual([
      "a1",
      "a2",
      "a3",
      "a4",
      "a5",
      "b1",
      "b2",
      "b3",
      "b4",
      "b5"
    ])
    for (const p of payloads) {
      expect(Object.keys(p)).toEqual(["id", "type", "at", "organization_id", "data"])
      expect(p).toMatchObject({ type: "task.created", organization_id: org.organization_id })
    }
    for (const r of received) {
      expect(r.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/)
      expect(r.headers["content-type"]).toBe("application/json")
      expect(Math.abs(Number(r.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30)
    }
    expect(new Set(received.map((r) => r.headers["webhook-id"])).size).toBe(10)
    // a tampered body or another secret does not verify
    const other = (await createWebhook(org.api_key, "/other")).secret
    expect(() => new Verifier(other).verify(received[0]!.body.toString(), headersOf(received[0]!))).toThrow()
    expect(() => new Verifier(hook.secret).verify(received[0]!.body.toString() + " ", headersOf(received[0]!)))
      .toThrow()

    // the outcome of an attempt is recorded just after the receiver answers
    const list = await eventually(async () => {
      const res = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
      return res.status === 200 && res.body.items.every((d: any) => d.status === "succeeded") ? res : undefined
    })
    expect(list.body.items.length).toBe(10)
    for (const d of list.body.items) {
      expect(d).toMatchObject({ status: "succeeded", event_type: "task.created", next_attempt_at: null })
      expect(d.attempts).toHaveLength(1)
      expect(d.attempts[0]).toMatchObject({ attempt: 1, status_code: 200, error: null })
      expect(d.attempts[0].response_excerpt).toMatch(/^answer \d+ to \/signed$/)
      expect(typeof d.attempts[0].latency_ms).toBe("number")
    }
  })

  it("retries a failing receiver under the same webhook-id until it recovers", async () => {
    const org = await node.bootstrap()
    answers.set("/flaky", (n) => (n <= 4 ? 503 : 200))
    const hook = await createWebhook(org.api_key, "/flaky")
    await appendEvents(db, org.organization_id, 2)
    const received = await eventually(() => {
      const ok = new Set(at("/flaky").slice(4).map((r) => r.headers["webhook-id"]))
      return ok.size === 2 ? at("/flaky") : undefined
    })
    const byId = new Map<string, Array<number>>()
    for (const r of received) {
      verified(hook.secret, r)
      const id = String(r.headers["webhook-id"])
      byId.set(id, [...(byId.get(id) ?? []), r.at])
    }
    // two deliveries, each sent several times under its one id, the retries spaced by the schedule
    expect(byId.size).toBe(2)
    for (const times of byId.values()) {
      expect(times.length).toBeGreaterThanOrEqual(2)
      expect(times.length).toBeLessThanOrEqual(3)
      expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(80)
    }
    // the receiver has answered; the outcome of the last attempt is recorded just after
    const list = await eventually(async () => {
      const res = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
      return res.body.items.every((d: any) => d.status === "succeeded") ? res : undefined
    })
    const attempts = list.body.items.flatMap((d: any) => d.attempts.map((a: any) => a.status_code))
    expect(attempts.filter((s: number) => s === 503)).toHaveLength(4)
    expect(list.body.items.map((d: any) => d.status)).toEqual(["succeeded", "succeeded"])
  })

  it("disables an endpoint that answers 410, with an audit record", async () => {
    const org = await node.bootstrap()
    answers.set("/gone", () => 410)
    const hook = await createWebhook(org.api_key, "/gone")
    await appendEvents(db, org.organization_id, 3)
    const disabled = await eventually(async () => {
      const got = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}`)
      return got.body.enabled === false ? got.body : undefined
    })
    expect(disabled.disabled_reason).toBe("gone")
    const audit = await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=DISABLE_WEBHOOK")
    expect(audit.body.items).toHaveLength(1)
    expect(audit.body.items[0]).toMatchObject({
      actor: { type: "system", id: "webhooks" },
      targets: [{ type: "webhook", id: hook.id }],
      details: { reason: "gone" }
    })
    // nothing more is sent to it; the first delivery failed for good
    const count = at("/gone").length
    await appendEvents(db, org.organization_id, 2, "task.created", "disabled")
    await new Promise((r) => setTimeout(r, 500))
    expect(at("/gone").length).toBe(count)
    const list = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries?status=failed`)
    expect(list.body.items.length).toBeGreaterThanOrEqual(1)
    expect(list.body.items[0].attempts.at(-1).status_code).toBe(410)
    // enabled again, it receives what happens from then on (the 2 events of while it was disabled are not sent)
    answers.set("/gone", () => 200)
    const enabled = await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: true })
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null })
    await appendEvents(db, org.organization_id, 2, "task.created", "again")
    const tags = () => at("/gone").map((r) => JSON.parse(r.body.toString()).data.tag)
    await eventually(() => tags().filter((t) => t === "again").length >= 2 ? true : undefined)
    expect(tags()).not.toContain("disabled")
  })

  it("disables an endpoint failing past the schedule, audited; a manual retry then delivers under the same id", async () => {
    const org = await node.bootstrap()
    answers.set("/down", () => 500)
    const hook = await createWebhook(org.api_key, "/down")
    await appendEvents(db, org.organization_id, 1)
    const disabled = await eventually(async () => {
      const got = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}`)
      return got.body.enabled === false ? got.body : undefined
    })
    expect(disabled.disabled_reason).toBe("failing")
    // one attempt, then one per entry of the schedule (100ms, 200ms)
    expect(at("/down")).toHaveLength(3)
    const audit = await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=DISABLE_WEBHOOK")
    expect(audit.body.items[0]).toMatchObject({ details: { reason: "failing" } })
    const list = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
    const [delivery] = list.body.items
    expect(delivery).toMatchObject({ status: "failed", next_attempt_at: null })
    expect(delivery.attempts.map((a: any) => a.status_code)).toEqual([500, 500, 500])

    // retry and ping refuse a disabled endpoint
    const refused = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/deliveries/${delivery.id}/retry`)
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 409, code: "webhook_disabled" })

    answers.set("/down", () => 200)
    await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: true })
    const retried = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/deliveries/${delivery.id}/retry`)
    expect(retried.status).toBe(200)
    expect(retried.body).toMatchObject({ id: delivery.id, status: "succeeded" })
    expect(retried.body.attempts.map((a: any) => a.status_code)).toEqual([500, 500, 500, 200])
    const ids = new Set(at("/down").map((r) => r.headers["webhook-id"]))
    expect([...ids]).toEqual([delivery.id])
  })

  it("an endpoint created disabled receives only what happens after it is enabled", async () => {
    const org = await node.bootstrap()
    const hook = await createWebhook(org.api_key, "/late", { enabled: false })
    expect(hook).toMatchObject({ enabled: false, disabled_reason: "manual" })
    await appendEvents(db, org.organization_id, 3, "task.created", "before")
    const enabled = await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: true })
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null })
    await appendEvents(db, org.organization_id, 2, "task.created", "after")
    await eventually(() => at("/late").length >= 2 ? true : undefined)
    // a marker sent after: once it is in, anything stale would have been sent before it
    await appendEvents(db, org.organization_id, 1, "task.created", "marker")
    await eventually(() => at("/late").length >= 3 ? true : undefined)
    const tags = at("/late").map((r) => verified(hook.secret, r)).map((p) => `${p.data.tag}${p.data.n}`).sort()
    expect(tags).toEqual(["after1", "after2", "marker1"])
  })

  it("enabled again after a disable: what happened while disabled is not replayed", async () => {
    const org = await node.bootstrap()
    const hook = await createWebhook(org.api_key, "/paused")
    await appendEvents(db, org.organization_id, 1, "task.created", "first")
    await eventually(() => at("/paused").length >= 1 ? true : undefined)
    await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: false })
    await appendEvents(db, org.organization_id, 3, "task.created", "paused")
    await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: true })
    await appendEvents(db, org.organization_id, 1, "task.created", "resumed")
    await eventually(() => at("/paused").length >= 2 ? true : undefined)
    await appendEvents(db, org.organization_id, 1, "task.created", "marker")
    await eventually(() => at("/paused").length >= 3 ? true : undefined)
    const tags = at("/paused").map((r) => verified(hook.secret, r)).map((p) => `${p.data.tag}${p.data.n}`).sort()
    expect(tags).toEqual(["first1", "marker1", "resumed1"])
    const list = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
    expect(list.body.items).toHaveLength(3)
  })

  it("a delivery waiting for its retry when the endpoint is disabled is cancelled; not resumed, retried on demand", async () => {
    const org = await node.bootstrap()
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    let healthy = false
    replies.set("/held", async (response) => {
      if (!healthy) await gate
      response.writeHead(healthy ? 200 : 503, { "content-type": "text/plain" })
      response.end(healthy ? "ok" : "down")
    })
    const hook = await createWebhook(org.api_key, "/held")
    await appendEvents(db, org.organization_id, 1, "task.created", "kept")
    await eventually(() => at("/held").length >= 1 ? true : undefined)
    // disabled while its first attempt is in flight; that attempt then fails, and is recorded
    await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: false })
    release()
    const cancelled = await eventually(async () => {
      const res = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries?status=cancelled`)
      return res.body.items[0]?.attempts.length === 1 ? res.body.items[0] : undefined
    })
    expect(cancelled).toMatchObject({ status: "cancelled", next_attempt_at: null })
    expect(cancelled.attempts.map((a: any) => a.status_code)).toEqual([503])
    expect((await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries?status=pending`)).body.items)
      .toEqual([])

    // as an earlier release left it (pending while disabled): enabling does not resume it either
    await db.query("UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now() WHERE id = $1", [
      cancelled.id
    ])
    // enabled again: it starts at the present, the cancelled delivery is not sent again by itself
    healthy = true
    await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: true })
    await appendEvents(db, org.organization_id, 1, "task.created", "marker")
    await eventually(() => at("/held").length >= 2 ? true : undefined)
    await new Promise((r) => setTimeout(r, 500))
    expect(at("/held").map((r) => JSON.parse(r.body.toString()).data.tag)).toEqual(["kept", "marker"])
    const still = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
    expect(still.body.items.find((d: any) => d.id === cancelled.id)).toMatchObject({ status: "cancelled" })

    // an explicit retry sends it, under its webhook-id, and records the next attempt
    const retried = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/deliveries/${cancelled.id}/retry`)
    expect(retried.status).toBe(200)
    expect(retried.body).toMatchObject({ id: cancelled.id, status: "succeeded" })
    expect(retried.body.attempts.map((a: any) => a.status_code)).toEqual([503, 200])
    expect(at("/held").filter((r) => r.headers["webhook-id"] === cancelled.id)).toHaveLength(2)
  })

  it("an endpoint disabled by a 410 has its other waiting deliveries cancelled, none sent again", async () => {
    const org = await node.bootstrap()
    // the first request answered is a 410, the others a 503 (their retries wait)
    answers.set("/gone-some", (n) => n === 1 ? 410 : 503)
    const hook = await createWebhook(org.api_key, "/gone-some")
    await appendEvents(db, org.organization_id, 3)
    const statuses = await eventually(async () => {
      const res = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
      const all = res.body.items.map((d: any) => d.status).sort()
      return res.body.items.length === 3 && !all.includes("pending") ? all : undefined
    })
    expect(statuses).toEqual(["cancelled", "cancelled", "failed"])
    expect((await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}`)).body.disabled_reason).toBe("gone")
    const count = at("/gone-some").length
    await new Promise((r) => setTimeout(r, 500))
    expect(at("/gone-some")).toHaveLength(count)
  })

  it("records whatever the receiver answers: NUL bytes, a character cut at the excerpt's limit", async () => {
    const org = await node.bootstrap()
    replies.set("/nul", (response) => {
      response.writeHead(500, { "content-type": "application/octet-stream" })
      response.end(Buffer.from([0x62, 0x61, 0x64, 0x00, 0x21]))
    })
    replies.set("/emoji", (response) => {
      response.writeHead(200, { "content-type": "text/plain" })
      response.end(`${"x".repeat(1023)}\u{1F600} and more`)
    })
    const nul = await createWebhook(org.api_key, "/nul")
    const failed = await call(node, org.api_key, "POST", `/v1/webhooks/${nul.id}/ping`)
    expect(failed.body).toMatchObject({ status: "pending" })
    expect(failed.body.attempts).toEqual([expect.objectContaining({ status_code: 500, response_excerpt: "bad!" })])
    // an excerpt that would end in half a character ends before it
    const emoji = await createWebhook(org.api_key, "/emoji")
    const ok = await call(node, org.api_key, "POST", `/v1/webhooks/${emoji.id}/ping`)
    expect(ok.body).toMatchObject({ status: "succeeded" })
    expect(ok.body.attempts[0].response_excerpt).toBe("x".repeat(1023))
    // and the failed one goes on with its schedule
    const retried = await eventually(async () => {
      const list = await call(node, org.api_key, "GET", `/v1/webhooks/${nul.id}/deliveries`)
      return list.body.items[0].attempts.length >= 2 ? list.body.items[0] : undefined
    })
    expect(retried.attempts[1]).toMatchObject({ attempt: 2, status_code: 500, response_excerpt: "bad!" })
  })

  it("an answer trickled out past the timeout fails the attempt", async () => {
    const org = await node.bootstrap()
    replies.set("/trickle", async (response) => {
      response.writeHead(200, { "content-type": "text/plain" })
      // a byte every 300 ms, each gap well within the 2 s timeout, for 6 s in all
      for (let i = 0; i < 20 && !response.destroyed; i++) {
        response.write(".")
        await new Promise((r) => setTimeout(r, 300))
      }
      response.end()
    })
    const hook = await createWebhook(org.api_key, "/trickle")
    const ping = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/ping`)
    expect(ping.body).toMatchObject({ status: "pending", delivered_at: null })
    expect(ping.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status_code: null, error: "no answer within 2000 ms" })
    ])
  })

  it("a receiver holding the attempt with informational answers (102 Processing) fails it at the timeout", async () => {
    const org = await node.bootstrap()
    replies.set("/processing", async (response) => {
      // each 1xx restarts undici's own wait for the head; for 6 s in all, then an answer too late to count
      for (let i = 0; i < 20 && !response.destroyed; i++) {
        response.writeProcessing()
        await new Promise((r) => setTimeout(r, 300))
      }
      if (!response.destroyed) response.writeHead(200).end()
    })
    const hook = await createWebhook(org.api_key, "/processing")
    const ping = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/ping`)
    expect(ping.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, status_code: null, error: "no answer within 2000 ms" })
    ])
  })

  it("a retry racing a disable does not leave a delivery pending on the disabled endpoint", async () => {
    const org = await node.bootstrap()
    // the first attempt succeeds, the retry fails (its next attempt would wait)
    answers.set("/race", (n) => n === 1 ? 200 : 500)
    const hook = await createWebhook(org.api_key, "/race")
    await appendEvents(db, org.organization_id, 1)
    const delivery = await eventually(async () => {
      const res = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
      return res.body.items[0]?.status === "succeeded" ? res.body.items[0] : undefined
    })
    const waiting = async () =>
      (await db.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%webhook%'"
      )).rows[0].n as number
    // the delivery's row held: the retry is let in (the endpoint enabled), and waits to write it
    const client = await db.connect()
    let retried: Promise<Awaited<ReturnType<typeof call>>>
    let disabled: Promise<Awaited<ReturnType<typeof call>>>
    try {
      await client.query("BEGIN")
      await client.query("SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE", [delivery.id])
      retried = call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/deliveries/${delivery.id}/retry`)
      await eventually(async () => (await waiting()) >= 1 || undefined, 10_000, "the retry to wait on the delivery")
      // meanwhile the endpoint is disabled
      let done = false
      disabled = call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: false }).finally(() => {
        done = true
      })
      await eventually(async () => done || (await waiting()) >= 2 || undefined, 10_000, "the disable to end or wait")
      await client.query("COMMIT")
    } finally {
      client.release()
    }
    expect((await disabled).body).toMatchObject({ enabled: false })
    const answer = await retried
    expect([200, 409]).toContain(answer.status)
    const after = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
    expect(after.body.items[0]).toMatchObject({ id: delivery.id })
    expect(after.body.items[0].status).not.toBe("pending")
  })

  it("a disable while a success is being recorded: both go through, no deadlock", async () => {
    const org = await node.bootstrap()
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => (release = resolve))
    replies.set("/recorded", async (response) => {
      await gate
      response.writeHead(200, { "content-type": "text/plain" })
      response.end("ok")
    })
    const hook = await createWebhook(org.api_key, "/recorded")
    await appendEvents(db, org.organization_id, 1)
    await eventually(() => at("/recorded").length >= 1 ? true : undefined)
    const waiting = async () =>
      (await db.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%webhook%'"
      )).rows[0].n as number
    // the endpoint's row held: the disable waits for it, then the success's record does
    const client = await db.connect()
    let disabled: Promise<Awaited<ReturnType<typeof call>>>
    try {
      await client.query("BEGIN")
      await client.query("SELECT id FROM webhooks WHERE id = $1 FOR UPDATE", [hook.id])
      disabled = call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, { enabled: false })
      await eventually(async () => (await waiting()) >= 1 || undefined, 10_000, "the disable to wait")
      release()
      await eventually(async () => (await waiting()) >= 2 || undefined, 10_000, "the record to wait")
      await client.query("COMMIT")
    } finally {
      client.release()
    }
    const answer = await disabled
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    const list = await eventually(async () => {
      const res = await call(node, org.api_key, "GET", `/v1/webhooks/${hook.id}/deliveries`)
      return res.body.items[0]?.attempts.length === 1 ? res.body.items[0] : undefined
    })
    expect(list).toMatchObject({ status: "succeeded" })
  })

  it("a URL changed while deliveries wait: what waits goes to the new URL, none is lost", async () => {
    const org = await node.bootstrap()
    // the old URL answers slowly: 8 at a time in flight, the rest wait on the node
    replies.set("/moving-old", async (response) => {
      await new Promise((r) => setTimeout(r, 300))
      response.writeHead(200)
      response.end()
    })
    const hook = await createWebhook(org.api_key, "/moving-old")
    await appendEvents(db, org.organization_id, 40)
    await eventually(() => at("/moving-old").length > 0 ? true : undefined)
    const moved = await call(node, org.api_key, "PATCH", `/v1/webhooks/${hook.id}`, {
      url: `${receiver.url}/moving-new`
    })
    expect(moved.status).toBe(200)
    const sentBefore = at("/moving-old").length
    const ids = (path: string) => at(path).map((r) => String(r.headers["webhook-id"]))
    await eventually(() => new Set([...ids("/moving-old"), ...ids("/moving-new")]).size === 40 ? true : undefined)
    // at most those already in flight (8) reach the old URL after the change
    expect(at("/moving-old").length).toBeLessThanOrEqual(sentBefore + 8)
    expect(at("/moving-new").length).toBeGreaterThan(0)
  })

  it("pings: a webhook.ping delivery, answered with its attempt", async () => {
    const org = await node.bootstrap()
    const hook = await createWebhook(org.api_key, "/ping")
    const ping = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/ping`)
    expect(ping.status).toBe(200)
    expect(ping.body).toMatchObject({ event_type: "webhook.ping", event_id: null, status: "succeeded" })
    expect(ping.body.attempts[0]).toMatchObject({ attempt: 1, status_code: 200 })
    const [received] = at("/ping")
    const payload = verified(hook.secret, received!)
    expect(payload).toMatchObject({
      id: ping.body.id,
      type: "webhook.ping",
      organization_id: org.organization_id,
      data: { webhook_id: hook.id }
    })
    expect(received!.headers["webhook-id"]).toBe(ping.body.id)
  })

  it("rotation: for the window, deliveries verify with the previous secret and with the new one", async () => {
    const org = await node.bootstrap()
    const hook = await createWebhook(org.api_key, "/rotated")
    const rotated = await call(node, org.api_key, "POST", `/v1/webhooks/${hook.id}/rotate-secret`)
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).toMatch(/^whsec_/)
    expect(rotated.body.secret).not.toBe(hook.secret)
    const expires = Date.parse(rotated.body.previous_secret_expires_at)
    expect(Math.abs(expires - Date.now() - 24 * 3600_000)).toBeLessThan(60_000)
    await appendEvents(db, org.organization_id, 1)
    const [received] = await eventually(() => at("/rotated").length > 0 ? at("/rotated") : undefined)
    expect(String(received!.headers["webhook-signature"]).split(" ")).toHaveLength(2)
    expect(verified(hook.secret, received!).type).toBe("task.created")
    expect(verified(rotated.body.secret, received!).type).toBe("task.created")
    const audit = await call(node, org.api_key, "GET", "/v1/audit-logs?event_type=ROTATE_WEBHOOK_SECRET")
    expect(audit.body.items).toHaveLength(1)
    expect(JSON.stringify(audit.body.items)).not.toContain(rotated.body.secret.slice(6))
    // past the window, the previous secret no longer signs
    await db.query("UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1", [
      hook.id
    ])
    await appendEvents(db, org.organization_id, 1)
    const later = await eventually(() => at("/rotated").length > 1 ? at("/rotated")[1] : undefined)
    expect(String(later.headers["webhook-signature"]).split(" ")).toHaveLength(1)
    expect(verified(rotated.body.secret, later).type).toBe("task.created")
    expect(() => verified(hook.secret, later)).toThrow()
  })

  it("delivers real events of a change (audit.recorded of a member added), decodable as the Event schema", async () => {
    const org = await node.bootstrap()
    const hook = await createWebhook(org.api_key, "/audit", { event_types: ["audit.recorded"] })
    const member = await addMember(node, org.api_key, "member")
    const received = await eventually(() => {
      const all = at("/audit").map((r) => verified(hook.secret, r))
      return all.some((p) => p.data.action === "CREATE_API_KEY") ? all : undefined
    })
    const added = received.find((p) => p.data.action === "ADD_MEMBER" || p.data.action === "CREATE_MEMBER")
    expect(added?.data.targets.some((t: any) => t.id === member.userId)).toBe(true)
    expect(received.every((p) => p.type === "audit.recorded" && p.organization_id === org.organization_id)).toBe(true)
    for (const p of received) Schema.decodeUnknownSync(Event)(p)
  })
})
