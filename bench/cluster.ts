import { Effect, Exit, Redacted, Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import pg from "pg"
import { Agent } from "undici"
import * as EmbeddedPostgres from "../src/db/EmbeddedPostgres.js"
import { commitBaseline } from "./support/commitBaseline.js"
import { percentile } from "./support/load.js"
import { startNode, stopAll, type SwitchyardNode, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy, writeResults } from "./support/report.js"
import { stepsSpec } from "./support/stepsSpec.js"

/**
 * Switchyard as a cluster, on one machine:
 *   - throughput: async invokes of a scripted agent (no model latency, no tools), each followed by the
 *     long poll `GET /v1/tasks/{id}?wait=30`, from 16 producers spread round-robin over 1, 2 and 3
 *     nodes sharing one PostgreSQL; tasks/s to `completed`, against the same-run baseline of the
 *     three commits a task stands for (bench/support/commitBaseline.ts) on that PostgreSQL;
 *   - failover: 3 nodes run long tasks (a tool call every 250 ms, on a real HTTP server here that
 *     records each call); one node is SIGKILLed, then restarted, several times. For each kill, the
 *     failover time is the gap from the kill to the moment the last task in flight made progress again
 *     (its next tool call, or its end), with the node defaults for shard locks and health checks.
 * Two cores run the load generator, every node and PostgreSQL: more nodes cannot add cores here, so the
 * throughput rows show what the cluster costs, not how it scales on more machines.
 */
export const name = "cluster"

const settings = {
  producers: 16,
  warmupMs: 2000,
  durationMs: 8000,
  nodeCounts: [1, 2, 3],
  failover: { kills: 5, tasksInFlight: 45, stepMs: 250, steps: 6, settleMs: 4000 }
} as const

const SECRET_KEY = Buffer.alloc(32, 9).toString("base64")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const dispatcher = new Agent({ connections: 64, keepAliveTimeout: 10_000 })

/** One PostgreSQL for every node of a run: the embedded server, as `npm start` runs it. */
const startPostgres = async () => {
  const dataDir = tempDir("bench-cluster-pg")
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(
    EmbeddedPostgres.make({ dataDir, port: 0, settings: { max_connections: "300" } }).pipe(Scope.extend(scope))
  )
  const url = Redacted.value(server.url)
  return { url, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const databaseUrl = async (admin: pg.Pool, url: string, database: string) => {
  await admin.query(`CREATE DATABASE ${database}`)
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

/** N nodes on one database; the first creates the organization and prints its key. */
const startNodes = async (count: number, url: string) => {
  const nodes: Array<SwitchyardNode> = []
  for (let i = 0; i < count; i++) nodes.push(await startClusterNode(url, i === 0))
  return nodes
}

const startClusterNode = (url: string, first: boolean) => {
  const dataDir = tempDir("bench-cluster-node")
  return startNode({
    dataDir,
    logLevel: "warning",
    logFile: Path.join(dataDir, "node.log"),
    expectApiKey: first,
    env: {
      DATABASE_URL: url,
      SWITCHYARD_SECRET_KEY: SECRET_KEY,
      SWITCHYARD_RUNNER_HOST: "127.0.0.1",
      SWITCHYARD_BOOTSTRAP_ON_FIRST_START: first ? "true" : "false",
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1"
    }
  })
}

const request = async (baseUrl: string, apiKey: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(baseUrl + path, {
    method,
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher
  } as RequestInit)
  return { status: response.status, body: await response.json() as any }
}

// --- throughput ---

const measureBaseline = async (pool: pg.Pool) => {
  const baseline = await commitBaseline(pool)
  let completed = 0
  const windowStart = performance.now() + settings.warmupMs
  const windowEnd = windowStart + settings.durationMs
  await Promise.all(Array.from({ length: settings.producers }, async () => {
    while (performance.now() < windowEnd) {
      await baseline.sequence()
      const now = performance.now()
      if (now >= windowStart && now <= windowEnd) completed++
    }
  }))
  await baseline.drop()
  return completed / (settings.durationMs / 1000)
}

const measureNodes = async (count: number, url: string) => {
  const nodes = await startNodes(count, url)
  const apiKey = nodes[0]!.apiKey!
  const agent = await request(nodes[0]!.baseUrl, apiKey, "POST", "/v1/agents", {
    name: "bench",
    model: { provider: "scripted", script: [{ text: "done" }] }
  })
  if (agent.status !== 201) throw new Error(`POST /v1/agents: ${agent.status} ${JSON.stringify(agent.body)}`)
  const invokeBody = { input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } }
  let completed = 0
  let failed = 0
  let next = 0
  const windowStart = performance.now() + settings.warmupMs
  const windowEnd = windowStart + settings.durationMs
  await Promise.all(Array.from({ length: settings.producers }, async () => {
    while (performance.now() < windowEnd) {
      const base = nodes[next++ % nodes.length]!.baseUrl
      const accepted = await request(
        base,
        apiKey,
        "POST",
        `/v1/agents/${agent.body.id}/invoke?asynchronous=true`,
        invokeBody
      )
      const ended = accepted.status === 202
        ? await request(nodes[next++ % nodes.length]!.baseUrl, apiKey, "GET", `/v1/tasks/${accepted.body.id}?wait=30`)
        : accepted
      const now = performance.now()
      if (ended.body.status !== "completed") failed++
      else if (now >= windowStart && now <= windowEnd) completed++
    }
  }))
  await Promise.all(nodes.map((n) => n.stop()))
  return { perSecond: completed / (settings.durationMs / 1000), failed }
}

// --- failover ---

/** A real HTTP server that records when each tool call arrived, by path. */
const startRecorder = async () => {
  const seen = new Map<string, number>()
  const server = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      const path = new URL(req.url ?? "/", "http://x").pathname
      if (!seen.has(path)) seen.set(path, Date.now())
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({ ok: true }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const measureFailover = async (url: string) => {
  const { kills, settleMs, stepMs, steps, tasksInFlight } = settings.failover
  const recorder = await startRecorder()
  const nodes = await startNodes(3, url)
  const apiKey = nodes[0]!.apiKey!
  const alive = new Set([0, 1, 2])
  const pick = (n: number) => {
    const live = [...alive]
    return nodes[live[n % live.length]!]!.baseUrl
  }
  const connector = await request(pick(0), apiKey, "POST", "/v1/tools/connectors", { spec: stepsSpec(recorder.url) })
  const connection = await request(pick(0), apiKey, "POST", `/v1/tools/connectors/${connector.body.id}/connections`, {
    name: "recorder",
    credentials: { type: "none" }
  })
  const script = [
    ...Array.from({ length: steps }, (_, i) => ({
      tool_calls: [{ name: "step", arguments: { path_params: { id: `{{input}}-${i + 1}` } } }],
      delay_ms: stepMs
    })),
    { text: "done", delay_ms: stepMs }
  ]
  const agent = await request(pick(0), apiKey, "POST", "/v1/agents", {
    name: "long",
    model: { provider: "scripted", script },
    skills: [{ connection_id: connection.body.id, operation_ids: ["step"] }]
  })
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`)

  // tasks in flight at all times; each records its end, its steps are in recorder.seen
  const ends = new Map<string, number>()
  const lost: Array<string> = []
  let stopping = false
  let serial = 0
  const retrying = async <A>(f: (n: number) => Promise<A>): Promise<A> => {
    for (let attempt = 0;; attempt++) {
      try {
        return await f(attempt)
      } catch (e) {
        if (attempt > 50) throw e
        await sleep(200)
      }
    }
  }
  const loop = async () => {
    while (!stopping) {
      const k = serial++
      const tag = `k${k}`
      // spread over the nodes: a task runs on the node that accepted it, so each node runs a third of them
      const accepted = await retrying((n) =>
        request(pick(k + n), apiKey, "POST", `/v1/agents/${agent.body.id}/invoke?asynchronous=true`, {
          input: { text: tag, user: { id: "u", email: "u@example.com" } }
        })
      )
      for (let n = 0;; n++) {
        const task = await retrying((m) => request(pick(n + m), apiKey, "GET", `/v1/tasks/${accepted.body.id}?wait=30`))
        if (task.body.status === "completed") {
          ends.set(tag, Date.now())
          break
        }
        if (task.body.status !== "pending" && task.body.status !== "executing") {
          lost.push(`${tag}:${task.body.status}`)
          break
        }
      }
    }
  }
  const loops = Array.from({ length: tasksInFlight }, loop)

  /** When the task tagged `tag` made its first progress after `at`: a step's call or its end. */
  const progressAfter = (tag: string, at: number) => {
    const times = [
      ...Array.from({ length: steps }, (_, i) => recorder.seen.get(`/steps/${tag}-${i + 1}`)),
      ends.get(tag)
    ]
    return times.filter((t): t is number => t !== undefined && t > at).sort((a, b) => a - b)[0]
  }
  const startedBefore = (tag: string, at: number) => (recorder.seen.get(`/steps/${tag}-1`) ?? Infinity) < at

  const failovers: Array<number> = []
  const gaps: Array<number> = []
  await sleep(settleMs)
  for (let k = 0; k < kills; k++) {
    const victim = 1 + (k % 2)
    const inFlight = Array.from({ length: serial }, (_, i) => `k${i}`).filter((tag) => !ends.has(tag))
    const killedAt = Date.now()
    alive.delete(victim)
    await nodes[victim]!.kill()
    const watched = inFlight.filter((tag) => startedBefore(tag, killedAt))
    const deadline = Date.now() + 60_000
    while (watched.some((tag) => progressAfter(tag, killedAt) === undefined) && Date.now() < deadline) await sleep(100)
    const taskGaps = watched.map((tag) => (progressAfter(tag, killedAt) ?? Date.now()) - killedAt)
    gaps.push(...taskGaps)
    const failover = Math.max(...taskGaps)
    failovers.push(failover)
    const affected = taskGaps.filter((g) => g > 4 * stepMs).length
    console.log(
      `  kill ${k + 1}: node ${victim}, ${watched.length} tasks in flight, ${affected} stalled by it; ` +
        `last one moved again after ${fmt(failover / 1000, 2)} s`
    )
    nodes[victim] = await startClusterNode(url, false)
    alive.add(victim)
    await sleep(settleMs)
  }
  stopping = true
  await Promise.all(loops)
  await Promise.all(nodes.map((n) => n.stop()))
  await recorder.close()
  return { failovers, gaps, lost, tasks: ends.size }
}

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const loadBefore = warnIfBusy()
  const postgres = await startPostgres()
  const admin = new pg.Pool({ connectionString: postgres.url, max: settings.producers })
  try {
    console.log(`Baseline: 3 commits per task on the cluster's PostgreSQL, ${settings.producers} producers`)
    const baseline = await measureBaseline(admin)
    console.log(`  ${fmt(baseline, 0)} sequences/s`)
    const rows: Array<{ nodes: number; perSecond: number; failed: number }> = []
    for (const count of settings.nodeCounts) {
      process.stdout.write(`${count} node(s): async invoke + wait, ${settings.producers} producers round-robin ...`)
      const measured = await measureNodes(count, await databaseUrl(admin, postgres.url, `throughput_${count}`))
      rows.push({ nodes: count, ...measured })
      process.stdout.write(
        ` ${fmt(measured.perSecond, 1)} tasks/s${measured.failed > 0 ? ` (${measured.failed} failed)` : ""}\n`
      )
    }
    console.log(
      `\nFailover: 3 nodes, ${settings.failover.tasksInFlight} long tasks in flight, ${settings.failover.kills} SIGKILLs`
    )
    const failover = await measureFailover(await databaseUrl(admin, postgres.url, "failover"))
    const sorted = [...failover.failovers].sort((a, b) => a - b)
    const gaps = [...failover.gaps].sort((a, b) => a - b)

    console.log(`\nThroughput (tasks/s to completed; ratio to the baseline's sequences/s and to 1 node):`)
    for (const r of rows) {
      console.log(
        `  ${r.nodes} node(s): ${fmt(r.perSecond, 1)} tasks/s = ${fmt(ratio(r.perSecond, baseline), 3)}x baseline, ` +
          `${fmt(ratio(r.perSecond, rows[0]!.perSecond), 2)}x one node`
      )
    }
    console.log(
      `Failover time per kill (kill → the last task in flight moves again): p50 ${
        fmt(percentile(sorted, 50) / 1000, 2)
      } s, max ${fmt(sorted[sorted.length - 1]! / 1000, 2)} s over ${sorted.length} kills; ` +
        `per task in flight: p50 ${fmt(percentile(gaps, 50) / 1000, 2)} s, p99 ${fmt(percentile(gaps, 99) / 1000, 2)} s`
    )
    console.log(
      `Tasks completed during the failover run: ${failover.tasks}; lost or failed: ${failover.lost.length}` +
        (failover.lost.length > 0 ? ` (${failover.lost.slice(0, 5).join(", ")})` : "")
    )
    console.log(
      `\nNote: 2 cores shared by the load generator, every node and PostgreSQL (load average ${
        fmt(loadBefore, 2)
      } before): a second or third node adds coordination, not cores.`
    )
    writeResults(name, settings, {
      baselinePerSecond: baseline,
      throughput: rows,
      failoverMs: failover.failovers,
      failoverTaskGapsMs: { p50: percentile(gaps, 50), p99: percentile(gaps, 99) },
      lost: failover.lost
    })
    return { ok: failover.lost.length === 0 && rows.every((r) => r.failed === 0) }
  } finally {
    await admin.end()
    await stopAll()
    await postgres.close()
  }
}
