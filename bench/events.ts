import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import pg from "pg"
import { FOLD_LOCK } from "../src/usage/UsageRepo.js"
import { measureThroughput, percentile, type Target } from "./support/load.js"
import { cpuTimeMs, postgresOf, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendToList } from "./support/runs.js"

/**
 * The event log's cost and latency (issue 22), on one node, in one run:
 *   - latency: rows committed straight into the node's embedded PostgreSQL at ~200 events/s (finished
 *     tasks: task.created and task.completed, one transaction each), followed by an SSE client on
 *     `GET /v1/events`: the time from the commit's acknowledgement to the event's arrival, p50 and p99;
 *   - cost: synchronous invokes (a scripted model that answers at once) from 16 producers, in blocks of
 *     `blockMs` with the event triggers enabled, then disabled (`ALTER TABLE … DISABLE TRIGGER`), which
 *     side first alternating; the first `skipMs` of each block is not counted. Tasks/s with events over
 *     tasks/s without, same machine, same minute; the median of the rounds' ratios. Twice: with nobody
 *     following the organization (its commits do not notify), and with an SSE client following it (they
 *     do, and the client reads every event). The usage folder, which folds the event log into rollups, is held
 *     off while cost is measured (its lock taken), so it is not counted as the event log's cost. Beside
 *     tasks/s, each block's CPU per task, of the node's process and of its PostgreSQL: where the cost goes.
 * Each run is appended to bench/results/events.json.
 */
export const name = "events"

const settings = {
  latency: { eventsPerSecond: 200, seconds: 10, warmupSeconds: 1 },
  cost: { producers: 16, rounds: 4, blockMs: 4000, skipMs: 1000, warmupMs: 4000 }
} as const

/** Informational targets, printed as PASS/MISS. */
const targets = { latencyP50Ms: 20, tasksWithEventsVsWithout: 0.9 } as const

const TRIGGERS: ReadonlyArray<readonly [string, string]> = [
  ["tasks", "events_tasks_inserted"],
  ["tasks", "events_tasks_updated"],
  ["task_events", "events_task_events_inserted"],
  ["approvals", "events_approvals_inserted"],
  ["approvals", "events_approvals_updated"],
  ["connections", "events_connections_updated"],
  ["audit_events", "events_audit_inserted"]
]

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Follows `GET /v1/events`, calling `onEvent` with each event's data as it arrives. */
const follow = async (
  baseUrl: string,
  apiKey: string,
  onEvent: (data: any, at: number) => void,
  types = "task.completed"
) => {
  const controller = new AbortController()
  const response = await fetch(`${baseUrl}/v1/events${types === "" ? "" : `?types=${types}`}`, {
    headers: { "x-api-key": apiKey },
    signal: controller.signal
  })
  if (response.status !== 200) throw new Error(`GET /v1/events: ${response.status} ${await response.text()}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const done = (async () => {
    let buffer = ""
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (done) return
      const at = performance.now()
      buffer += decoder.decode(value, { stream: true })
      let cut: number
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut)
        buffer = buffer.slice(cut + 2)
        const data = block.split("\n").find((l) => l.startsWith("data: "))
        if (data !== undefined) onEvent(JSON.parse(data.slice(6)), at)
      }
    }
  })()
  return {
    close: async () => {
      controller.abort()
      await done
    }
  }
}

const measureLatency = async (baseUrl: string, apiKey: string, pool: pg.Pool, organizationId: string) => {
  const { eventsPerSecond, seconds, warmupSeconds } = settings.latency
  const committedAt = new Map<string, number>()
  // an event can reach this process before the acknowledgement of its commit does: both are kept, and
  // matched at the end (such an event counts as 0 ms)
  const arrivedAt = new Map<string, number>()
  let received = 0
  const stream = await follow(baseUrl, apiKey, (data, at) => {
    received++
    arrivedAt.set(data.data.task_id, at)
  })
  await sleep(300)
  // two events per transaction: a task inserted finished (the sweep leaves it alone)
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
  const deadline = performance.now() + 5000
  const arrived = () => [...committedAt.keys()].filter((id) => arrivedAt.has(id)).length
  while (arrived() < committedAt.size && performance.now() < deadline) await sleep(50)
  await stream.close()
  const sorted = [...committedAt].flatMap(([id, t0]) => {
    const at = arrivedAt.get(id)
    return at === undefined ? [] : [Math.max(0, at - t0)]
  }).sort((a, b) => a - b)
  const elapsed = (performance.now() - start) / 1000
  return {
    eventsPerSecond: (total * 2) / ((total * interval) / 1000),
    measured: committedAt.size,
    received: sorted.length,
    beforeAcknowledgement: [...committedAt].filter(([id, t0]) => (arrivedAt.get(id) ?? Infinity) < t0).length,
    missing: committedAt.size - sorted.length,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? Number.NaN,
    totalReceived: received,
    seconds: elapsed
  }
}

const setTriggers = async (pool: pg.Pool, enabled: boolean) => {
  for (const [table, trigger] of TRIGGERS) {
    await pool.query(`ALTER TABLE ${table} ${enabled ? "ENABLE" : "DISABLE"} TRIGGER ${trigger}`)
  }
}

/**
 * Holds the usage fold's lock for as long as it runs, so the node's usage folder (which reads the event log)
 * skips its rounds: the cost measured is the event log's alone, not the usage rollups' too.
 */
const withoutUsageFold = async <A>(pool: pg.Pool, f: () => Promise<A>): Promise<A> => {
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    await client.query("SELECT pg_advisory_xact_lock($1)", [FOLD_LOCK])
    return await f()
  } finally {
    await client.query("ROLLBACK").catch(() => undefined)
    client.release()
  }
}

const measureCost = (target: Target, pool: pg.Pool, nodePid: number) =>
  withoutUsageFold(pool, () => measureCostNow(target, pool, nodePid))

/** CPU ms used by the node's own process and by its PostgreSQL (its descendants), from now to `read`. */
const cpuSince = (nodePid: number) => {
  const read = () => ({ node: cpuTimeMs([nodePid], { descendants: false }), all: cpuTimeMs([nodePid]) })
  const start = read()
  return () => {
    const end = read()
    if (start.node === undefined || end.node === undefined) return undefined
    const node = end.node - start.node
    return { node, postgres: end.all! - start.all! - node }
  }
}

const measureCostNow = async (target: Target, pool: pg.Pool, nodePid: number) => {
  const { blockMs, producers, rounds, skipMs, warmupMs } = settings.cost
  const counted = { on: [] as Array<number>, off: [] as Array<number> }
  // CPU µs per task over each block's counted window: the node's process, and its PostgreSQL
  const cpu = {
    on: [] as Array<{ node: number; postgres: number }>,
    off: [] as Array<{ node: number; postgres: number }>
  }
  let errors = 0
  // not counted: the node's JIT, pools and caches warm up
  await measureThroughput(target, { concurrency: producers, warmupMs: 0, durationMs: warmupMs })
  for (let round = 0; round < rounds; round++) {
    for (const enabled of round % 2 === 0 ? [true, false] : [false, true]) {
      await setTriggers(pool, enabled)
      let window: (() => { node: number; postgres: number } | undefined) | undefined
      let used: { node: number; postgres: number } | undefined
      const timers = [
        setTimeout(() => (window = cpuSince(nodePid)), skipMs),
        setTimeout(() => (used = window?.()), blockMs)
      ]
      const result = await measureThroughput(target, {
        concurrency: producers,
        warmupMs: skipMs,
        durationMs: blockMs - skipMs
      })
      for (const t of timers) clearTimeout(t)
      errors += result.errors
      const side = enabled ? "on" : "off"
      counted[side].push(result.rps)
      const perTask = used === undefined || result.requests === 0
        ? undefined
        : { node: used.node * 1000 / result.requests, postgres: used.postgres * 1000 / result.requests }
      if (perTask !== undefined) cpu[side].push(perTask)
      process.stdout.write(
        `    events ${enabled ? "on " : "off"}: ${fmt(result.rps, 0)} tasks/s` +
          (perTask === undefined
            ? "\n"
            : `, CPU per task: node ${fmt(perTask.node, 0)} µs, PostgreSQL ${fmt(perTask.postgres, 0)} µs\n`)
      )
    }
  }
  await setTriggers(pool, true)
  const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
  const median = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)
  // each round's two blocks saw the same minute of this noisy machine: their ratio, then the median of those
  const ratios = counted.on.map((on, i) => ratio(on, counted.off[i]!))
  const { rows: [perTask] } = await pool.query<{ n: string }>(
    "SELECT (count(*)::float8 / greatest(count(DISTINCT task_id), 1))::text AS n FROM events WHERE task_id IS NOT NULL"
  )
  const cpuMedian = (xs: ReadonlyArray<{ node: number; postgres: number }>) =>
    xs.length === 0 ? undefined : { node: median(xs.map((x) => x.node)), postgres: median(xs.map((x) => x.postgres)) }
  return {
    cpuPerTaskUs: { on: cpuMedian(cpu.on), off: cpuMedian(cpu.off) },
    tasksPerSecondWithEvents: mean(counted.on),
    tasksPerSecondWithout: mean(counted.off),
    ratio: median(ratios),
    ratioOfMeans: ratio(mean(counted.on), mean(counted.off)),
    roundRatios: ratios,
    blocks: counted,
    eventsPerTask: Number(perTask?.n ?? 0),
    errors
  }
}

const cpuLine = (cpu: Record<"on" | "off", { node: number; postgres: number } | undefined>) =>
  cpu.on === undefined || cpu.off === undefined ?
    "" :
    `\n  CPU per task (medians of the blocks), on against off: node ${fmt(cpu.on.node, 0)} against ${
      fmt(cpu.off.node, 0)
    } µs, PostgreSQL ${fmt(cpu.on.postgres, 0)} against ${fmt(cpu.off.postgres, 0)} µs`

/** Appends this run to bench/results/events.json (an array of runs). */
const append = (run: Record<string, unknown>) => appendToList(name, settings, run)

export const run = async () => {
  warnIfBusy()
  const tmp = tempDir("bench-events-")
  const dataDir = Path.join(tmp, "data")
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    const apiKey = node.apiKey!
    const postgres = postgresOf(dataDir)
    const pool = new pg.Pool({ ...postgres, user: "postgres", database: "postgres", max: 8 })
    try {
      const me = await (await fetch(`${node.baseUrl}/v1/me`, { headers: { "x-api-key": apiKey } })).json() as any
      const organizationId: string = me.organization_id ?? me.organization?.id
      console.log(`Latency: commits of ${settings.latency.eventsPerSecond} events/s, followed over SSE`)
      const latency = await measureLatency(node.baseUrl, apiKey, pool, organizationId)
      console.log(
        `  p50 ${fmt(latency.p50Ms, 2)} ms, p90 ${fmt(latency.p90Ms, 2)} ms, p99 ${fmt(latency.p99Ms, 2)} ms, ` +
          `max ${fmt(latency.maxMs, 2)} ms (${latency.received} of ${latency.measured}) — target p50 ≤ ` +
          `${targets.latencyP50Ms} ms: ${latency.p50Ms <= targets.latencyP50Ms ? "PASS" : "MISS"}`
      )
      const created = await fetch(`${node.baseUrl}/v1/agents`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "bench", model: { provider: "scripted", script: [{ text: "done" }] } })
      })
      const agent = await created.json() as { id: string }
      const target: Target = {
        name: "sync invoke",
        url: `${node.baseUrl}/v1/agents/${agent.id}/invoke`,
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })
      }
      const print = (cost: Awaited<ReturnType<typeof measureCost>>) =>
        console.log(
          `  with events ${fmt(cost.tasksPerSecondWithEvents, 0)} tasks/s, without ${
            fmt(cost.tasksPerSecondWithout, 0)
          } tasks/s (means); median of the rounds' ratios ${fmt(cost.ratio, 3)}x (${
            fmt(cost.eventsPerTask, 1)
          } events per task) — target ≥ ${targets.tasksWithEventsVsWithout}x: ${
            cost.ratio >= targets.tasksWithEventsVsWithout ? "PASS" : "MISS"
          }` + cpuLine(cost.cpuPerTaskUs)
        )
      console.log(`Cost, nobody following: sync invokes from ${settings.cost.producers} producers, triggers on/off`)
      const unfollowed = await measureCost(target, pool, node.pid)
      print(unfollowed)
      console.log("Cost, an SSE client following every event of the organization")
      let followedEvents = 0
      const stream = await follow(node.baseUrl, apiKey, () => void followedEvents++, "")
      const followed = await measureCost(target, pool, node.pid)
      await stream.close()
      print(followed)
      const ok = latency.missing === 0 && unfollowed.errors === 0 && followed.errors === 0
      append({ ok, latency, cost: { unfollowed, followed: { ...followed, eventsReceived: followedEvents } }, targets })
      return { ok }
    } finally {
      await pool.end()
      await node.stop()
    }
  } finally {
    await stopAll()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}
