import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import pg from "pg"
import { Agent, request } from "undici"
import { percentile } from "./support/load.js"
import { startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendToList } from "./support/runs.js"

/**
 * Webhook delivery (issue 22), one node, one run:
 *   - latency: finished tasks committed straight into the node's embedded PostgreSQL at ~200 events/s
 *     (task.created and task.completed, one transaction each), delivered to a receiver in this process: the
 *     time from the commit's acknowledgement to the task.completed delivery's arrival, p50 and p99;
 *   - throughput: a backlog of `backlog` events committed at once (in transactions of 500), delivered to the
 *     same receiver: deliveries/s from the first commit to the last arrival, against a bare undici POST loop
 *     (same body size, same concurrency as the node's per-endpoint default, keep-alive) to the same receiver.
 *     Rounds alternate which goes first; the ratio is the median of the rounds' ratios.
 * Each run is appended to bench/results/webhooks.json.
 */
export const name = "webhooks"

const settings = {
  latency: { eventsPerSecond: 200, seconds: 10, warmupSeconds: 1 },
  throughput: { backlog: 5000, rounds: 3, concurrency: 8 }
} as const

/** Informational targets, printed as PASS/MISS. */
const targets = { latencyP50Ms: 50, deliveriesVsBarePost: 0.5 } as const

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const postgresOf = (dataDir: string) => {
  const lines = Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")
  return {
    port: Number(lines[3]),
    host: lines[4]?.trim() || "127.0.0.1",
    password: Fs.readFileSync(Path.join(dataDir, "pg-password"), "utf8").trim()
  }
}

/** The receiver: answers 204 at once, and tells `onBody` what arrived and when. */
const startReceiver = async () => {
  let onBody: (path: string, body: string, at: number) => void = () => undefined
  let count = 0
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const at = performance.now()
      count++
      res.writeHead(204)
      res.end()
      onBody(req.url ?? "/", Buffer.concat(chunks).toString("utf8"), at)
    })
  })
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    set onBody(f: typeof onBody) {
      onBody = f
    },
    get count() {
      return count
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>

const api = async (baseUrl: string, apiKey: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`)
  return text === "" ? undefined : JSON.parse(text)
}

const measureLatency = async (receiver: Receiver, pool: pg.Pool, organizationId: string) => {
  const { eventsPerSecond, seconds, warmupSeconds } = settings.latency
  const committedAt = new Map<string, number>()
  // a delivery can reach this process before the acknowledgement of its commit does: both are kept, and
  // matched at the end (such a delivery counts as 0 ms)
  const arrivedAt = new Map<string, number>()
  let deliveries = 0
  receiver.onBody = (path, body, at) => {
    if (path !== "/latency") return
    deliveries++
    const event = JSON.parse(body)
    if (event.type === "task.completed") arrivedAt.set(event.data.task_id, at)
  }
  const interval = 2000 / eventsPerSecond
  const total = Math.round((seconds + warmupSeconds) * eventsPerSecond / 2)
  const warmup = Math.round(warmupSeconds * eventsPerSecond / 2)
  const agentId = Crypto.randomUUID()
  const start = performance.now()
  const writes: Array<Promise<void>> = []
  for (let i = 0; i < total; i++) {
    const due = start + i * interval
    const wait = due - performance.now()
    if (wait > 0) await sleep(wait)
    const id = Crypto.randomUUID()
    writes.push(
      pool.query(
        `INSERT INTO tasks (id, organization_id, agent_id, status, result, source, user_id, user_email, input,
           started_at, finished_at)
         VALUES ($1, $2, $3, 'completed', 'ok', 'api', 'u', 'u@example.com', 'hi', now(), now())`,
        [id, organizationId, agentId]
      ).then(() => {
        if (i >= warmup) committedAt.set(id, performance.now())
      })
    )
  }
  await Promise.all(writes)
  const deadline = performance.now() + 10_000
  const arrived = () => [...committedAt.keys()].filter((id) => arrivedAt.has(id)).length
  while (arrived() < committedAt.size && performance.now() < deadline) await sleep(50)
  const sorted = [...committedAt].flatMap(([id, t0]) => {
    const at = arrivedAt.get(id)
    return at === undefined ? [] : [Math.max(0, at - t0)]
  }).sort((a, b) => a - b)
  return {
    eventsPerSecond: (total * 2) / ((total * interval) / 1000),
    measured: committedAt.size,
    received: sorted.length,
    missing: committedAt.size - sorted.length,
    deliveries,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? Number.NaN
  }
}

/** A backlog of synthetic events committed at once; deliveries/s until the last one arrived. */
const webhookRound = async (receiver: Receiver, pool: pg.Pool, organizationId: string, round: number) => {
  const { backlog } = settings.throughput
  const tag = `r${round}`
  let arrived = 0
  let last = 0
  receiver.onBody = (path, body, at) => {
    if (path !== "/throughput" || !body.includes(`"tag":"${tag}"`)) return
    arrived++
    last = at
  }
  const start = performance.now()
  for (let done = 0; done < backlog; done += 500) {
    await pool.query(
      `SELECT events_append(ARRAY(
         SELECT ROW($1::uuid, 'task.created', NULL::uuid, NULL::uuid, NULL::uuid,
           jsonb_build_object('tag', $2::text, 'n', n, 'pad', repeat('x', 200)), false)::event_draft
         FROM generate_series(1, $3::int) n ORDER BY n))`,
      [organizationId, tag, Math.min(500, backlog - done)]
    )
  }
  const deadline = performance.now() + 120_000
  while (arrived < backlog && performance.now() < deadline) await sleep(20)
  return { perSecond: arrived / ((last - start) / 1000), arrived }
}

/** The control: the same number of POSTs of a body of the same size, `concurrency` at a time, keep-alive. */
const bareRound = async (receiver: Receiver) => {
  const { backlog, concurrency } = settings.throughput
  receiver.onBody = () => undefined
  const dispatcher = new Agent({ connections: concurrency })
  const body = JSON.stringify({
    id: "4406636445697",
    type: "task.created",
    at: new Date().toISOString(),
    organization_id: Crypto.randomUUID(),
    data: { tag: "bare", n: 1, pad: "x".repeat(200) }
  })
  let next = 0
  let errors = 0
  const start = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < backlog) {
      next++
      const response = await request(`${receiver.url}/bare`, {
        method: "POST",
        dispatcher,
        headers: { "content-type": "application/json" },
        body
      })
      await response.body.dump()
      if (response.statusCode !== 204) errors++
    }
  }))
  const perSecond = backlog / ((performance.now() - start) / 1000)
  await dispatcher.close()
  return { perSecond, errors }
}

const append = (run: Record<string, unknown>) => appendToList(name, settings, run)

export const run = async () => {
  warnIfBusy()
  const tmp = tempDir("bench-webhooks-")
  const dataDir = Path.join(tmp, "data")
  const receiver = await startReceiver()
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true,
      env: { SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" }
    })
    const apiKey = node.apiKey!
    const pool = new pg.Pool({ ...postgresOf(dataDir), user: "postgres", database: "postgres", max: 8 })
    try {
      const me = await api(node.baseUrl, apiKey, "GET", "/v1/me")
      const organizationId: string = me.organization_id ?? me.organization?.id
      const latencyHook = await api(node.baseUrl, apiKey, "POST", "/v1/webhooks", {
        url: `${receiver.url}/latency`,
        event_types: ["task.created", "task.completed"]
      })
      await sleep(500)
      console.log(`Latency: commits of ${settings.latency.eventsPerSecond} events/s, delivered to a receiver`)
      const latency = await measureLatency(receiver, pool, organizationId)
      console.log(
        `  p50 ${fmt(latency.p50Ms, 2)} ms, p90 ${fmt(latency.p90Ms, 2)} ms, p99 ${fmt(latency.p99Ms, 2)} ms, ` +
          `max ${fmt(latency.maxMs, 2)} ms (${latency.received} of ${latency.measured}) — target p50 ≤ ` +
          `${targets.latencyP50Ms} ms: ${latency.p50Ms <= targets.latencyP50Ms ? "PASS" : "MISS"}`
      )
      await api(node.baseUrl, apiKey, "PATCH", `/v1/webhooks/${latencyHook.id}`, { enabled: false })
      await api(node.baseUrl, apiKey, "POST", "/v1/webhooks", {
        url: `${receiver.url}/throughput`,
        event_types: ["task.created"]
      })
      await sleep(500)
      console.log(
        `Throughput: a backlog of ${settings.throughput.backlog} events, against bare undici POSTs ` +
          `(${settings.throughput.concurrency} at a time)`
      )
      const webhook: Array<number> = []
      const bare: Array<number> = []
      let errors = 0
      let lost = 0
      for (let round = 0; round < settings.throughput.rounds; round++) {
        for (const side of round % 2 === 0 ? ["webhook", "bare"] : ["bare", "webhook"]) {
          if (side === "webhook") {
            const r = await webhookRound(receiver, pool, organizationId, round)
            lost += settings.throughput.backlog - r.arrived
            webhook.push(r.perSecond)
            console.log(`    webhooks: ${fmt(r.perSecond, 0)} deliveries/s (${r.arrived} delivered)`)
          } else {
            const r = await bareRound(receiver)
            errors += r.errors
            bare.push(r.perSecond)
            console.log(`    bare:     ${fmt(r.perSecond, 0)} POST/s`)
          }
        }
      }
      const ratios = webhook.map((w, i) => ratio(w, bare[i]!))
      const median = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)
      const throughput = {
        deliveriesPerSecond: median(webhook),
        barePostsPerSecond: median(bare),
        ratio: median(ratios),
        roundRatios: ratios,
        rounds: { webhook, bare },
        errors,
        lost
      }
      console.log(
        `  webhooks ${fmt(throughput.deliveriesPerSecond, 0)}/s, bare ${fmt(throughput.barePostsPerSecond, 0)}/s ` +
          `(medians); median of the rounds' ratios ${fmt(throughput.ratio, 2)}x — target ≥ ` +
          `${targets.deliveriesVsBarePost}x: ${throughput.ratio >= targets.deliveriesVsBarePost ? "PASS" : "MISS"}`
      )
      const ok = latency.missing === 0 && errors === 0 && lost === 0
      append({ ok, latency, throughput, targets })
      return { ok }
    } finally {
      await pool.end()
      await node.stop()
    }
  } finally {
    await receiver.close()
    await stopAll()
  }
}
