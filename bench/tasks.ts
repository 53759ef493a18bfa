import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { commitBaseline } from "./support/commitBaseline.js"
import { Connection, type Outcome, requestBytes, responseBody } from "./support/connection.js"
import { type Latency, latencyOf, measureLatency, measureThroughput, percentile, type Target } from "./support/load.js"
import {
  cpuProfiling,
  cpuTimeMs,
  postgresOf,
  startNode,
  stopAll,
  type SwitchyardNode,
  tempDir
} from "./support/processes.js"
import { fmt, ratio, warnIfBusy, writeResults as write } from "./support/report.js"

/**
 * Cost of an agent task against the database work it stands for, measured in one run on one node:
 *   - baseline: the commits a task needs at the least, done directly with `pg` on the node's own
 *     embedded PostgreSQL, over its Unix socket as the node connects: INSERT pending, UPDATE executing,
 *     UPDATE completed (three autocommit statements on a pool of 16 connections), one sequence at a time
 *     (latency) and from 16 concurrent producers (throughput);
 *   - sync invoke: `POST /v1/agents/{id}/invoke` of an agent whose scripted model answers at once (no
 *     tools, no model latency), one at a time; every answer must be 200 with `status: "completed"`;
 *   - async invoke: `POST …/invoke?asynchronous=true` (202, pending), then the long poll
 *     `GET /v1/tasks/{id}?wait=30` (it answers when the task ends), from 16 concurrent producers:
 *     completed tasks per second, and the time from the invoke to the answer that saw it completed;
 *   - one poll: `GET /v1/tasks/{id}` of a finished task, to price the polls the async row pays for;
 *   - sync invoke and baseline interleaved: 40 sequences back to back, then 40 invokes, and again (the
 *     first 3 of each block are not kept: work the other side left running lands there), so that both
 *     see the same machine. This VM's speed drifts by a third within a minute, so the sync target is
 *     judged on these blocks; the separate rows above are kept for their CPU and database counters;
 *   - async throughput and baseline throughput interleaved the same way, for the async target: 4 s of
 *     the baseline's 16 producers and 4 s of the async producers, 6 rounds, which side goes first
 *     alternating; the first second of each block is not counted. Both sides take about a second to
 *     recover from the other's leftover load (per 250 ms: the baseline rose from 1,560 to 2,100/s, the
 *     async tasks from 760 to 1,000/s), so blocks of 2 s counted from 0.4 s measured mostly that.
 * Each measurement also records CPU time per unit (the node with its PostgreSQL, and PostgreSQL alone),
 * database counters per unit (transactions, rows, WAL), and the cores the whole machine was busy, so
 * load from other programs shows. The node runs at log level warning (BENCH_TASKS_LOG_LEVEL=info for the production default).
 *
 * BENCH_ENTITY_MESSAGE_POLL_INTERVAL / BENCH_ENTITY_REPLY_POLL_INTERVAL (e.g. "50 millis") and BENCH_SHARDS_PER_GROUP are passed to
 * the node as SWITCHYARD_ENTITY_*_POLL_INTERVAL; such a run writes bench/results/tasks-overrides.json
 * (and an info run tasks-info.json), so that tasks.json always holds the default run.
 * BENCH_CPU_PROF=<dir> starts the node with `--cpu-prof` as in bench/connectors.ts (see
 * bench/support/cpuProfile.ts; the measurement windows are printed at the end).
 */
export const name = "tasks"

const settings = {
  waitSeconds: 30,
  producers: 16,
  baseline: { poolSize: 16, warmup: 100, sequences: 1000, warmupMs: 1000, durationMs: 5000 },
  sync: { warmup: 200, invokes: 400, maxMs: 25_000 },
  interleaved: { rounds: 12, blockSize: 40, skip: 3, maxMs: 30_000 },
  interleavedThroughput: { rounds: 6, blockMs: 4000, skipMs: 1000 },
  async: { warmupMs: 2000, durationMs: 10_000, taskTimeoutMs: 30_000 },
  poll: { warmupMs: 1000, durationMs: 3000, requests: 300 }
} as const

/** Informational targets: printed as PASS/MISS, never a failure of the run. */
const targets = {
  /** Sync invoke p50 / baseline sequence p50, at most. */
  syncP50VsBaseline: 3,
  /** Async tasks/s / baseline sequences/s, at least. */
  asyncVsBaseline: 0.5
} as const

const terminal = new Set(["completed", "error", "cancelled"])

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The monotonic clock in µs, as V8 stamps .cpuprofile samples (see support/cpuProfile.ts). */
const monotonicUs = () => process.hrtime.bigint() / 1000n
const windows: Array<{ readonly label: string; readonly fromUs: string; readonly toUs: string }> = []

/** Runs `f`, recording its window for BENCH_CPU_PROF. */
const window = async <A>(label: string, f: () => Promise<A>): Promise<A> => {
  const fromUs = monotonicUs()
  try {
    return await f()
  } finally {
    windows.push({ label, fromUs: String(fromUs), toUs: String(monotonicUs()) })
  }
}

// --- the node's embedded PostgreSQL ---

/**
 * Cumulative counters of the database (pg_stat_database, pg_stat_wal), to say how many commits and how
 * much WAL a task costs. Backends report them with a delay of up to about a second, so a difference over
 * a window of several seconds is approximate.
 */
interface DbCounters {
  readonly commits: number
  readonly inserted: number
  readonly updated: number
  readonly deleted: number
  readonly walRecords: number
  readonly walBytes: number
}

const dbCounters = async (pool: pg.Pool): Promise<DbCounters | undefined> => {
  try {
    const { rows } = await pool.query<Record<string, string>>(
      `SELECT d.xact_commit AS commits, d.tup_inserted AS inserted, d.tup_updated AS updated,
              d.tup_deleted AS deleted, w.wal_records AS wal_records, w.wal_bytes AS wal_bytes
         FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`
    )
    const r = rows[0]!
    return {
      commits: Number(r["commits"]),
      inserted: Number(r["inserted"]),
      updated: Number(r["updated"]),
      deleted: Number(r["deleted"]),
      walRecords: Number(r["wal_records"]),
      walBytes: Number(r["wal_bytes"])
    }
  } catch {
    return undefined
  }
}

/**
 * Backends report their counters when idle, at most once a second, some of them seconds later: asks the
 * pool's backends to report now, then waits, so the baseline's counts do not land in the next window.
 */
const settleStats = async (pool: pg.Pool) => {
  const clients = await Promise.all(Array.from({ length: settings.baseline.poolSize }, () => pool.connect()))
  try {
    await Promise.all(clients.map((c) => c.query("SELECT pg_stat_force_next_flush()").catch(() => undefined)))
  } finally {
    for (const c of clients) c.release()
  }
  await sleep(2500)
}

type PerUnit = { readonly [K in keyof DbCounters]: number }

const perUnit = (a: DbCounters | undefined, b: DbCounters | undefined, units: number): PerUnit | null => {
  if (a === undefined || b === undefined || units === 0) return null
  const d = (k: keyof DbCounters) => (b[k] - a[k]) / units
  return {
    commits: d("commits"),
    inserted: d("inserted"),
    updated: d("updated"),
    deleted: d("deleted"),
    walRecords: d("walRecords"),
    walBytes: d("walBytes")
  }
}

/**
 * CPU time (ms) busy on the whole machine so far (Linux /proc/stat: user, nice, system, irq, softirq and
 * steal of all cores, in USER_HZ = 10 ms ticks), to tell what other programs took during a window.
 */
const machineBusyMs = (): number | undefined => {
  try {
    const fields = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
    const [user, nice, system, , , irq, softirq, steal] = fields
    return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 10
  } catch {
    return undefined
  }
}

/** CPU time (ms) of the processes under test: the node's tree, and of it the PostgreSQL tree; this process; the machine. */
const cpuSnapshot = (nodePid: number, pgPid: number) => {
  const usage = process.cpuUsage()
  return {
    node: cpuTimeMs([nodePid]),
    pg: cpuTimeMs([pgPid]),
    bench: (usage.user + usage.system) / 1000,
    machine: machineBusyMs(),
    wallMs: performance.now()
  }
}
type CpuSnapshot = ReturnType<typeof cpuSnapshot>

/**
 * Cores in use on average over a window: the whole machine, the node's tree (with PostgreSQL), this
 * process, and the rest (other programs, and the baseline's PostgreSQL backends are in the node's tree).
 */
interface Cores {
  readonly machine: number
  readonly nodeTree: number
  readonly bench: number
  readonly other: number
}

const coresDuring = (a: CpuSnapshot, b: CpuSnapshot): Cores | null => {
  const wall = b.wallMs - a.wallMs
  if (a.machine === undefined || b.machine === undefined || a.node === undefined || b.node === undefined || wall <= 0) {
    return null
  }
  const machine = (b.machine - a.machine) / wall
  const nodeTree = (b.node - a.node) / wall
  const bench = (b.bench - a.bench) / wall
  return { machine, nodeTree, bench, other: Math.max(0, machine - nodeTree - bench) }
}

interface CpuPerUnit {
  /** The node with its PostgreSQL (the node's process tree). */
  readonly nodeTreeMs: number | null
  /** Of nodeTreeMs, PostgreSQL (the postmaster and its backends). */
  readonly postgresMs: number | null
  /** This process: the `pg` client of the baseline, the HTTP client of the invokes. */
  readonly benchMs: number
}

const cpuPerUnit = (a: CpuSnapshot, b: CpuSnapshot, units: number): CpuPerUnit | null => {
  if (units === 0) return null
  const d = (
    x: number | undefined,
    y: number | undefined
  ) => (x === undefined || y === undefined ? null : (y - x) / units)
  return { nodeTreeMs: d(a.node, b.node), postgresMs: d(a.pg, b.pg), benchMs: (b.bench - a.bench) / units }
}

// --- results ---

interface Row {
  readonly label: string
  readonly kind: "baseline" | "sync" | "async" | "poll"
  /** One unit at a time (c=1): a 3-commit sequence, or a sync invoke. */
  readonly latency: Latency | null
  readonly throughput: {
    readonly concurrency: number
    readonly seconds: number
    /** Sequences, or tasks seen completed by a poll, inside the window. */
    readonly completed: number
    readonly perSecond: number
    readonly failed: number
  } | null
  /** Async: invoke sent → the long poll saw it completed (client side). */
  readonly invokeToCompletedMs: { readonly p50: number; readonly p90: number; readonly p99: number } | null
  /** Async: the task's own created_at → finished_at (server side, ms precision). */
  readonly serverDurationMs: { readonly p50: number; readonly p90: number; readonly p99: number } | null
  readonly polls: number | null
  readonly cpu: CpuPerUnit | null
  /** Average cores busy over the measurement (null when not measured or not on Linux). */
  readonly cores: Cores | null
  readonly db: PerUnit | null
  readonly statuses: Readonly<Record<string, number>>
}

const quantiles = (samples: ReadonlyArray<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) }
}

const errorsOf = (r: Row) => (r.latency?.errors ?? 0) + (r.throughput?.failed ?? 0)

const table = (rows: ReadonlyArray<Row>): string => {
  const header = [
    "target",
    "p50 ms (c=1)",
    "p99 ms (c=1)",
    `per s (c=${settings.producers})`,
    "done p50 ms",
    "CPU ms/unit",
    "xacts/unit",
    "errors"
  ]
  const lines = rows.map((r) => [
    r.label,
    r.latency === null ? "-" : fmt(r.latency.p50Ms, 3),
    r.latency === null ? "-" : fmt(r.latency.p99Ms, 3),
    r.throughput === null ? "-" : fmt(r.throughput.perSecond, 1),
    r.invokeToCompletedMs === null ? "-" : fmt(r.invokeToCompletedMs.p50, 1),
    r.cpu?.nodeTreeMs == null ? "-" : fmt(r.kind === "baseline" ? r.cpu.postgresMs ?? Number.NaN : r.cpu.nodeTreeMs, 3),
    r.db === null ? "-" : fmt(r.db.commits, 1),
    String(errorsOf(r))
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)))
  const render = (cells: ReadonlyArray<string>) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ")
  return [render(header), widths.map((w) => "-".repeat(w)).join("  "), ...lines.map(render)].join("\n")
}

/**
 * CPU and database counters over a measurement's window (from `warmupMs` to `warmupMs + durationMs` after
 * now), divided by the units done in it.
 */
const measuredWindow = (node: SwitchyardNode, pgPid: number, pool: pg.Pool, warmupMs: number, durationMs: number) => {
  let cpuStart: CpuSnapshot | undefined
  let cpuEnd: CpuSnapshot | undefined
  let dbStart: Promise<DbCounters | undefined> | undefined
  let dbEnd: Promise<DbCounters | undefined> | undefined
  const timers = [
    setTimeout(() => {
      cpuStart = cpuSnapshot(node.pid, pgPid)
      dbStart = dbCounters(pool)
    }, warmupMs),
    setTimeout(() => {
      cpuEnd = cpuSnapshot(node.pid, pgPid)
      dbEnd = dbCounters(pool)
    }, warmupMs + durationMs)
  ]
  return {
    stop: () => timers.forEach(clearTimeout),
    per: async (units: number) => ({
      cpu: cpuStart && cpuEnd ? cpuPerUnit(cpuStart, cpuEnd, units) : null,
      cores: cpuStart && cpuEnd ? coresDuring(cpuStart, cpuEnd) : null,
      db: perUnit(await dbStart, await dbEnd, units)
    })
  }
}

// --- baseline ---

const measureBaseline = async (pool: pg.Pool, node: SwitchyardNode, pgPid: number): Promise<Row> => {
  const { durationMs, sequences, warmup, warmupMs } = settings.baseline
  const baseline = await commitBaseline(pool)
  const statuses: Record<string, number> = {}
  let failed = 0
  const sequence = async (): Promise<boolean> => {
    try {
      await baseline.sequence()
      return true
    } catch (e) {
      const key = `error:${e instanceof Error ? e.message : String(e)}`.slice(0, 80)
      statuses[key] = (statuses[key] ?? 0) + 1
      failed++
      return false
    }
  }
  try {
    process.stdout.write(`  baseline: ${sequences} sequences one at a time ...`)
    for (let i = 0; i < warmup; i++) await sequence()
    const samples: Array<number> = []
    await window("baseline latency", async () => {
      for (let i = 0; i < sequences; i++) {
        const t0 = process.hrtime.bigint()
        const ok = await sequence()
        samples.push(Number(process.hrtime.bigint() - t0) / 1e6)
        if (ok) statuses["ok"] = (statuses["ok"] ?? 0) + 1
      }
    })
    const latencyErrors = failed
    const latency = latencyOf(samples, statuses, latencyErrors)
    process.stdout.write(` p50 ${fmt(latency.p50Ms, 3)} ms\n`)

    process.stdout.write(`  baseline: ${settings.producers} producers for ${durationMs / 1000} s ...`)
    const start = performance.now()
    const windowStart = start + warmupMs
    const windowEnd = windowStart + durationMs
    let completed = 0
    const costs = measuredWindow(node, pgPid, pool, warmupMs, durationMs)
    const producer = async () => {
      while (performance.now() < windowEnd) {
        const ok = await sequence()
        const now = performance.now()
        if (!ok) await sleep(10)
        else if (now >= windowStart && now <= windowEnd) completed++
      }
    }
    await window("baseline throughput", () => Promise.all(Array.from({ length: settings.producers }, producer)))
    costs.stop()
    const throughput = {
      concurrency: settings.producers,
      seconds: durationMs / 1000,
      completed,
      perSecond: completed / (durationMs / 1000),
      failed: failed - latencyErrors
    }
    process.stdout.write(` ${fmt(throughput.perSecond, 0)} sequences/s\n`)
    return {
      label: "baseline: pg INSERT + UPDATE + UPDATE",
      kind: "baseline",
      latency,
      throughput,
      invokeToCompletedMs: null,
      serverDurationMs: null,
      polls: null,
      ...(await costs.per(completed)),
      statuses
    }
  } finally {
    await baseline.drop()
  }
}

// --- Switchyard ---

interface TaskJson {
  readonly id?: string
  readonly status?: string
  readonly created_at?: string
  readonly finished_at?: string | null
}

const taskOf = (outcome: Outcome): TaskJson | undefined => {
  if (outcome.response === undefined) return undefined
  try {
    return JSON.parse(responseBody(outcome.response)) as TaskJson
  } catch {
    return undefined
  }
}

const createAgent = async (baseUrl: string, apiKey: string): Promise<string> => {
  const response = await fetch(`${baseUrl}/v1/agents`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", model: { provider: "scripted", script: [{ text: "done" }] } })
  })
  const text = await response.text()
  if (response.status !== 201) throw new Error(`POST /v1/agents: ${response.status} ${text}`)
  return (JSON.parse(text) as { readonly id: string }).id
}

const invokeBody = JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })

const invokeTarget = (baseUrl: string, apiKey: string, agentId: string, asynchronous: boolean): Target => ({
  name: asynchronous ? "async invoke" : "sync invoke",
  url: `${baseUrl}/v1/agents/${agentId}/invoke${asynchronous ? "?asynchronous=true" : ""}`,
  method: "POST",
  headers: { "x-api-key": apiKey, "content-type": "application/json" },
  body: invokeBody
})

/** A sync invoke must answer the finished task: anything but `completed` is a failed task. */
const completedTask = (outcome: Outcome): string | undefined => {
  const task = taskOf(outcome)
  return task?.status === "completed" ? undefined : `task:${task?.status ?? "unparseable"}`
}

const measureSync = async (target: Target, node: SwitchyardNode, pgPid: number, pool: pg.Pool): Promise<Row> => {
  const { invokes, maxMs, warmup } = settings.sync
  process.stdout.write(`  sync invoke: up to ${invokes} one at a time (at most ${maxMs / 1000} s) ...`)
  // warm-up responses are not checked by measureLatency: one checked request first
  const first = new Connection(
    new URL(target.url).hostname,
    Number(new URL(target.url).port),
    requestBytes(new URL(target.url), target.headers ?? {}, { method: "POST", body: invokeBody })
  )
  const probe = await first.send()
  first.close()
  const rejected = probe.ok ? completedTask(probe) : probe.status
  if (rejected !== undefined) {
    throw new Error(`sync invoke: expected 200 with a completed task, got ${probe.status} (${rejected})`)
  }
  const warm = await measureLatency(target, { warmup: 0, requests: warmup, check: completedTask })
  if (warm.errors > 0) {
    throw new Error(`sync invoke: ${warm.errors} failed during warm-up: ${JSON.stringify(warm.statuses)}`)
  }
  const measured = await window("sync invoke latency", async () => {
    const cpuStart = cpuSnapshot(node.pid, pgPid)
    const dbStart = await dbCounters(pool)
    const latency = await measureLatency(target, { warmup: 0, requests: invokes, maxMs, check: completedTask })
    const cpuEnd = cpuSnapshot(node.pid, pgPid)
    const dbEnd = await dbCounters(pool)
    return {
      latency,
      cpu: cpuPerUnit(cpuStart, cpuEnd, latency.requests),
      cores: coresDuring(cpuStart, cpuEnd),
      db: perUnit(dbStart, dbEnd, latency.requests)
    }
  })
  process.stdout.write(` ${measured.latency.requests} invokes, p50 ${fmt(measured.latency.p50Ms, 3)} ms\n`)
  return {
    label: "switchyard sync invoke",
    kind: "sync",
    latency: measured.latency,
    throughput: null,
    invokeToCompletedMs: null,
    serverDurationMs: null,
    polls: null,
    cpu: measured.cpu,
    cores: measured.cores,
    db: measured.db,
    statuses: measured.latency.statuses
  }
}

/** Baseline sequence and sync invoke in turns, one at a time: their p50s and the ratio of the two. */
const measureInterleaved = async (target: Target, pool: pg.Pool) => {
  const { blockSize, maxMs, rounds, skip } = settings.interleaved
  process.stdout.write(
    `  interleaved: up to ${rounds} rounds of ${blockSize} baseline sequences, then ${blockSize} sync invokes ...`
  )
  const baseline = await commitBaseline(pool, "bench_baseline_interleaved")
  const url = new URL(target.url)
  const connection = new Connection(
    url.hostname,
    Number(url.port),
    requestBytes(url, target.headers ?? {}, { method: "POST", body: invokeBody })
  )
  const baselineMs: Array<number> = []
  const syncMs: Array<number> = []
  let errors = 0
  /** One block back to back; its first units are not kept (what the other side left running lands there). */
  const block = async (samples: Array<number>, unit: () => Promise<void>) => {
    for (let i = 0; i < blockSize; i++) {
      const t0 = process.hrtime.bigint()
      await unit()
      if (i >= skip) samples.push(Number(process.hrtime.bigint() - t0) / 1e6)
    }
  }
  try {
    const deadline = performance.now() + maxMs
    for (let round = 0; round < rounds && performance.now() < deadline; round++) {
      await block(baselineMs, baseline.sequence)
      await block(syncMs, async () => {
        const outcome = await connection.send()
        if (!outcome.ok || completedTask(outcome) !== undefined) errors++
      })
    }
  } finally {
    connection.close()
    await baseline.drop()
  }
  const p50 = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)
  const result = { samples: syncMs.length, baselineP50Ms: p50(baselineMs), syncP50Ms: p50(syncMs), errors }
  process.stdout.write(
    ` ${result.samples} each: baseline p50 ${fmt(result.baselineP50Ms, 3)} ms, sync p50 ${
      fmt(result.syncP50Ms, 3)
    } ms\n`
  )
  return result
}

/** One async task: invoke, then long-poll until it ends; the status that ended it ("completed" is the only success). */
const asyncTask = async (
  connection: Connection,
  invokeBytes: Buffer,
  baseUrl: string,
  apiKey: string,
  timeoutMs: number,
  polled: () => void
): Promise<{ status: string; task?: TaskJson }> => {
  const accepted = await connection.send(invokeBytes)
  if (accepted.status !== "202") return { status: `invoke:${accepted.status}` }
  const pending = taskOf(accepted)
  if (pending?.id === undefined) return { status: "invoke:unparseable" }
  const pollBytes = requestBytes(new URL(`${baseUrl}/v1/tasks/${pending.id}?wait=${settings.waitSeconds}`), {
    "x-api-key": apiKey
  })
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const answer = await connection.send(pollBytes)
    polled()
    if (!answer.ok) return { status: `poll:${answer.status}` }
    const task = taskOf(answer)
    if (task?.status === undefined) return { status: "poll:unparseable" }
    if (terminal.has(task.status)) return { status: task.status, task }
    if (performance.now() > deadline) return { status: `timeout:${task.status}` }
  }
}

/**
 * Baseline throughput and async throughput in turns, each from 16 producers for a block of `blockMs`:
 * units per second of each side, over the counted part of its blocks (the first `skipMs` of a block is
 * not counted: the other side's leftover work lands there).
 */
const measureInterleavedThroughput = async (target: Target, baseUrl: string, apiKey: string, pool: pg.Pool) => {
  const { blockMs, rounds, skipMs } = settings.interleavedThroughput
  process.stdout.write(
    `  interleaved: ${rounds} rounds of ${blockMs / 1000} s of baseline producers and ${
      blockMs / 1000
    } s of async producers (the first ${skipMs / 1000} s of each not counted) ...`
  )
  const baseline = await commitBaseline(pool, "bench_baseline_interleaved_throughput")
  const url = new URL(target.url)
  const invokeBytes = requestBytes(url, target.headers ?? {}, { method: "POST", body: invokeBody })
  let errors = 0
  const counted = { baseline: 0, async: 0 }
  /** One block: `producers` loops of `unit` (true when it succeeded); returns the units counted. */
  const block = async (unitOf: () => { unit: () => Promise<boolean>; close: () => void }) => {
    const start = performance.now()
    const from = start + skipMs
    const end = start + blockMs
    let units = 0
    await Promise.all(Array.from({ length: settings.producers }, async () => {
      const { close, unit } = unitOf()
      try {
        while (performance.now() < end) {
          const ok = await unit()
          const now = performance.now()
          if (!ok) {
            errors++
            await sleep(10)
          } else if (now >= from && now <= end) units++
        }
      } finally {
        close()
      }
    }))
    return units
  }
  try {
    const baselineBlock = async () => {
      counted.baseline += await block(() => ({
        unit: () => baseline.sequence().then(() => true, () => false),
        close: () => undefined
      }))
    }
    const asyncBlock = async () => {
      counted.async += await block(() => {
        const connection = new Connection(url.hostname, Number(url.port), invokeBytes)
        return {
          unit: () =>
            asyncTask(connection, invokeBytes, baseUrl, apiKey, settings.async.taskTimeoutMs, () => undefined).then((
              r
            ) => r.status === "completed"),
          close: () => connection.close()
        }
      })
    }
    // each side follows the other as often as it goes first
    for (let round = 0; round < rounds; round++) {
      for (const side of round % 2 === 0 ? [baselineBlock, asyncBlock] : [asyncBlock, baselineBlock]) await side()
    }
  } finally {
    await baseline.drop()
  }
  const seconds = (rounds * (blockMs - skipMs)) / 1000
  const result = {
    rounds,
    seconds,
    baselinePerSecond: counted.baseline / seconds,
    asyncPerSecond: counted.async / seconds,
    errors
  }
  process.stdout.write(
    ` baseline ${fmt(result.baselinePerSecond, 0)} sequences/s, async ${fmt(result.asyncPerSecond, 0)} tasks/s\n`
  )
  return result
}

const measureAsync = async (
  target: Target,
  baseUrl: string,
  apiKey: string,
  node: SwitchyardNode,
  pgPid: number,
  pool: pg.Pool
): Promise<Row> => {
  const { durationMs, taskTimeoutMs, warmupMs } = settings.async
  process.stdout.write(
    `  async invoke + wait (?wait=${settings.waitSeconds}): ${settings.producers} producers for ${
      durationMs / 1000
    } s ...`
  )
  const url = new URL(target.url)
  const invokeBytes = requestBytes(url, target.headers ?? {}, { method: "POST", body: invokeBody })
  const start = performance.now()
  const windowStart = start + warmupMs
  const windowEnd = windowStart + durationMs
  const statuses: Record<string, number> = {}
  const tally = (status: string) => (statuses[status] = (statuses[status] ?? 0) + 1)
  const toCompleted: Array<number> = []
  const serverDurations: Array<number> = []
  let completed = 0
  let failed = 0
  let polls = 0
  const costs = measuredWindow(node, pgPid, pool, warmupMs, durationMs)

  // each task's polls, added up for the tasks counted (those ending in the window) only
  const oneTask = (connection: Connection) => {
    let taskPolls = 0
    return asyncTask(connection, invokeBytes, baseUrl, apiKey, taskTimeoutMs, () => taskPolls++).then((r) => ({
      ...r,
      polls: taskPolls
    }))
  }

  const producer = async () => {
    const connection = new Connection(url.hostname, Number(url.port), invokeBytes)
    try {
      while (performance.now() < windowEnd) {
        const t0 = performance.now()
        const { polls: taskPolls, status, task } = await oneTask(connection)
        const now = performance.now()
        tally(status)
        // a failed task is a failure wherever it happens; completions count inside the window only
        if (status !== "completed") {
          failed++
          await sleep(10)
          continue
        }
        if (now < windowStart || now > windowEnd) continue
        completed++
        polls += taskPolls
        toCompleted.push(now - t0)
        if (task?.created_at && task.finished_at) {
          serverDurations.push(Date.parse(task.finished_at) - Date.parse(task.created_at))
        }
      }
    } finally {
      connection.close()
    }
  }
  await window("async throughput", () => Promise.all(Array.from({ length: settings.producers }, producer)))
  costs.stop()
  const perSecond = completed / (durationMs / 1000)
  process.stdout.write(` ${fmt(perSecond, 1)} tasks/s\n`)
  return {
    label: `switchyard async invoke + wait`,
    kind: "async",
    latency: null,
    throughput: { concurrency: settings.producers, seconds: durationMs / 1000, completed, perSecond, failed },
    invokeToCompletedMs: quantiles(toCompleted),
    serverDurationMs: quantiles(serverDurations),
    polls: completed > 0 ? polls : null,
    ...(await costs.per(completed)),
    statuses
  }
}

/**
 * What one poll costs: `GET /v1/tasks/{id}` of a finished task, from the same 16 producers without pause
 * (req/s and CPU per request), then one at a time. The async row pays this once per poll.
 */
const measurePoll = async (target: Target, node: SwitchyardNode, pgPid: number, pool: pg.Pool): Promise<Row> => {
  const { durationMs, requests, warmupMs } = settings.poll
  process.stdout.write(`  ${target.name}: ${settings.producers} producers for ${durationMs / 1000} s ...`)
  const costs = measuredWindow(node, pgPid, pool, warmupMs, durationMs)
  const throughput = await window(
    "poll throughput",
    () => measureThroughput(target, { concurrency: settings.producers, warmupMs, durationMs })
  )
  costs.stop()
  const latency = await measureLatency(target, { warmup: 20, requests })
  process.stdout.write(` ${fmt(throughput.rps, 0)} req/s, p50 ${fmt(latency.p50Ms, 3)} ms\n`)
  return {
    label: "switchyard GET /v1/tasks/{id} (one poll)",
    kind: "poll",
    latency,
    throughput: {
      concurrency: throughput.concurrency,
      seconds: throughput.seconds,
      completed: throughput.requests,
      perSecond: throughput.rps,
      failed: throughput.errors
    },
    invokeToCompletedMs: null,
    serverDurationMs: null,
    polls: null,
    ...(await costs.per(throughput.requests)),
    statuses: {
      ...throughput.statuses,
      ...Object.fromEntries(Object.entries(latency.statuses).map(([k, v]) => [`c1:${k}`, v]))
    }
  }
}

const verdict = (ok: boolean) => (ok ? "PASS" : "MISS")

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const overrides: Record<string, string> = {}
  for (const key of ["ENTITY_MESSAGE_POLL_INTERVAL", "ENTITY_REPLY_POLL_INTERVAL", "SHARDS_PER_GROUP"]) {
    const value = process.env[`BENCH_${key}`]
    if (value !== undefined && value !== "") overrides[`SWITCHYARD_${key}`] = value
  }
  const logLevel = process.env["BENCH_TASKS_LOG_LEVEL"] === "info" ? "info" : "warning"
  // only the default run writes tasks.json: a variant must not be taken for it
  const variant = [logLevel === "info" ? "info" : "", Object.keys(overrides).length > 0 ? "overrides" : ""]
    .filter((v) => v !== "")
  const resultsName = [name, ...variant].join("-")
  const writeResults = (json: Record<string, unknown>) =>
    write(resultsName, { ...settings, logLevel, nodeEnv: overrides }, json)

  const tmp = tempDir("switchyard-bench-")
  const dataDir = Path.join(tmp, "data")
  Fs.mkdirSync(dataDir)
  const loadBefore = warnIfBusy()
  const { dir: profileDir, nodeArgs } = cpuProfiling()
  const rows: Array<Row> = []
  let interleaved: Awaited<ReturnType<typeof measureInterleaved>> | undefined
  let interleavedThroughput: Awaited<ReturnType<typeof measureInterleavedThroughput>> | undefined
  let pool: pg.Pool | undefined
  try {
    const settingsText = Object.entries(overrides).map(([k, v]) => `, ${k}=${v}`).join("")
    console.log(`Switchyard node (fresh data dir, log level ${logLevel}${settingsText})`)
    const node = await startNode({
      dataDir,
      logLevel,
      logFile: Path.join(tmp, `node-${logLevel}.log`),
      expectApiKey: true,
      env: overrides,
      nodeArgs
    })
    console.log(`  ready after ${fmt(node.startupMs / 1000, 2)} s`)
    const apiKey = node.apiKey!
    const postgres = postgresOf(dataDir)
    pool = new pg.Pool({
      host: postgres.host,
      port: postgres.port,
      user: "postgres",
      password: postgres.password,
      database: "postgres",
      max: settings.baseline.poolSize,
      // backends that exit take their CPU time out of the process tree: keep them for the whole run
      idleTimeoutMillis: 0
    })

    console.log(`Baseline: the node's embedded PostgreSQL through pg.Pool (${settings.baseline.poolSize} connections)`)
    rows.push(await measureBaseline(pool, node, postgres.pid))
    await settleStats(pool)

    const agentId = await createAgent(node.baseUrl, apiKey)
    console.log(`Switchyard: agent with a scripted model answering "done" at once (no tools)`)
    rows.push(await measureSync(invokeTarget(node.baseUrl, apiKey, agentId, false), node, postgres.pid, pool))
    interleaved = await measureInterleaved(invokeTarget(node.baseUrl, apiKey, agentId, false), pool)
    rows.push(
      await measureAsync(
        invokeTarget(node.baseUrl, apiKey, agentId, true),
        node.baseUrl,
        apiKey,
        node,
        postgres.pid,
        pool
      )
    )
    interleavedThroughput = await measureInterleavedThroughput(
      invokeTarget(node.baseUrl, apiKey, agentId, true),
      node.baseUrl,
      apiKey,
      pool
    )
    const finished = await fetch(`${node.baseUrl}/v1/agents/${agentId}/invoke`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: invokeBody
    })
    const task = (await finished.json()) as TaskJson
    if (finished.status !== 200 || task.status !== "completed" || task.id === undefined) {
      throw new Error(`sync invoke for the poll target: ${finished.status} ${JSON.stringify(task)}`)
    }
    const pollTarget: Target = {
      name: "GET /v1/tasks/{id}",
      url: `${node.baseUrl}/v1/tasks/${task.id}`,
      headers: { "x-api-key": apiKey }
    }
    rows.push(await measurePoll(pollTarget, node, postgres.pid, pool))
    await pool.end()
    pool = undefined
    const stoppedMs = await node.stop()
    console.log(`  node stopped in ${fmt(stoppedMs / 1000, 2)} s`)
  } catch (e) {
    writeResults({ ok: false, error: e instanceof Error ? e.message : String(e), loadAverageBefore: loadBefore, rows })
    throw e
  } finally {
    await pool?.end().catch(() => undefined)
    await stopAll()
  }
  const loadAfter = Os.loadavg()[0]!

  const [baseline, sync, async_, poll] = rows as [Row, Row, Row, Row]
  console.log(`\n${table(rows)}\n`)
  console.log(
    `(CPU ms/unit: PostgreSQL per sequence for the baseline, node + its PostgreSQL per task or request otherwise; ` +
      `xacts/unit: transactions committed per unit, reads included, from pg_stat_database, approximate)`
  )
  const separateSyncVsBaseline = ratio(sync.latency!.p50Ms, baseline.latency!.p50Ms)
  const syncVsBaseline = ratio(interleaved!.syncP50Ms, interleaved!.baselineP50Ms)
  const syncP99VsBaseline = ratio(sync.latency!.p99Ms, baseline.latency!.p99Ms)
  const separateAsyncVsBaseline = ratio(async_.throughput!.perSecond, baseline.throughput!.perSecond)
  const asyncVsBaseline = ratio(interleavedThroughput!.asyncPerSecond, interleavedThroughput!.baselinePerSecond)
  const server = async_.serverDurationMs!
  console.log(
    `\nAsync: invoke → seen completed p50 ${fmt(async_.invokeToCompletedMs!.p50, 1)} ms, p99 ${
      fmt(async_.invokeToCompletedMs!.p99, 1)
    } ms (long polls with ?wait=${settings.waitSeconds}; ${
      fmt((async_.polls ?? 0) / Math.max(1, async_.throughput!.completed), 1)
    } per task); ` +
      `the task's own created_at → finished_at p50 ${fmt(server.p50, 0)} ms, p99 ${fmt(server.p99, 0)} ms.`
  )
  console.log(`\nPer unit (sequence or task):`)
  for (const r of rows) {
    const cpu = r.cpu === null
      ? "CPU n/a"
      : `CPU node+PostgreSQL ${r.kind === "baseline" ? "-" : fmt(r.cpu.nodeTreeMs ?? Number.NaN, 2)} ms, ` +
        `PostgreSQL ${fmt(r.cpu.postgresMs ?? Number.NaN, 2)} ms, bench client ${fmt(r.cpu.benchMs, 2)} ms`
    const db = r.db === null
      ? "database counters n/a"
      : `${fmt(r.db.commits, 1)} transactions, ${fmt(r.db.inserted, 1)} rows inserted, ${
        fmt(r.db.updated, 1)
      } updated, ${fmt(r.db.deleted, 1)} deleted, ${fmt(r.db.walRecords, 0)} WAL records (${
        fmt(r.db.walBytes / 1024, 1)
      } KiB)`
    console.log(`  ${r.label}: ${cpu}; ${db}`)
  }
  const pollsPerTask = (async_.polls ?? 0) / Math.max(1, async_.throughput!.completed)
  const pollCpu = poll.cpu?.nodeTreeMs ?? Number.NaN
  console.log(
    `  => of the async task's ${fmt(async_.cpu?.nodeTreeMs ?? Number.NaN, 1)} ms, its ${fmt(pollsPerTask, 1)} polls ` +
      `take about ${fmt(pollsPerTask * pollCpu, 1)} ms (${fmt(pollCpu, 2)} ms each); ` +
      `the sync invoke's ${fmt(sync.cpu?.nodeTreeMs ?? Number.NaN, 1)} ms is the task itself`
  )

  console.log(`\nCores busy on average (of ${Os.cpus().length}) during each measurement:`)
  let skewed = false
  for (const r of rows) {
    if (r.cores === null) continue
    const c = r.cores
    skewed ||= c.other > 0.25
    console.log(
      `  ${r.label}: machine ${fmt(c.machine, 2)}; node + PostgreSQL ${fmt(c.nodeTree, 2)}, bench process ${
        fmt(c.bench, 2)
      }, other programs ${fmt(c.other, 2)}`
    )
  }
  if (skewed) {
    console.log(`  !! other programs took a noticeable share of the cores: these numbers are skewed (low).`)
  }

  const latencyOk = syncVsBaseline <= targets.syncP50VsBaseline
  const throughputOk = asyncVsBaseline >= targets.asyncVsBaseline
  console.log(`\nTargets (log level ${logLevel}; informational, a miss does not fail the run):`)
  console.log(
    `  ${verdict(latencyOk)}  sync invoke p50 / baseline sequence p50, interleaved = ${fmt(syncVsBaseline, 2)}x ` +
      `(target <= ${targets.syncP50VsBaseline}x; ${interleaved!.samples} each: ${fmt(interleaved!.syncP50Ms, 3)} / ${
        fmt(interleaved!.baselineP50Ms, 3)
      } ms; measured apart: p50 ${fmt(separateSyncVsBaseline, 1)}x, p99 ${fmt(syncP99VsBaseline, 1)}x)`
  )
  console.log(
    `  ${verdict(throughputOk)}  async tasks/s / baseline sequences/s, interleaved = ${fmt(asyncVsBaseline, 2)}x ` +
      `(target >= ${targets.asyncVsBaseline}x; ${fmt(interleavedThroughput!.asyncPerSecond, 0)} / ${
        fmt(interleavedThroughput!.baselinePerSecond, 0)
      } per s over ${interleavedThroughput!.seconds} s each; measured apart: ${fmt(separateAsyncVsBaseline, 2)}x)`
  )
  console.log(
    `\nNote: ${Os.cpus().length} CPU core(s) shared by the load generator, the node and its embedded PostgreSQL; ` +
      `load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after (it includes this run's own load).`
  )
  if (nodeArgs.length > 0) {
    console.log(`\nCPU profile of the node is in ${profileDir}. Measurement windows:`)
    for (const w of windows) {
      console.log(`  ${w.label}: node --import tsx bench/support/cpuProfile.ts FILE --from ${w.fromUs} --to ${w.toUs}`)
    }
  }

  const failed = rows.filter((r) => errorsOf(r) > 0)
  for (const r of failed) {
    console.log(
      `\n!!! ERRORS: ${r.label}: ${errorsOf(r)} failed (${JSON.stringify(r.statuses)}). Its numbers are NOT valid.`
    )
  }
  if (interleaved!.errors > 0) {
    console.log(`\n!!! ERRORS: interleaved sync invokes: ${interleaved!.errors} failed. The sync ratio is NOT valid.`)
  }
  if (interleavedThroughput!.errors > 0) {
    console.log(
      `\n!!! ERRORS: interleaved throughput: ${interleavedThroughput!.errors} failed. The async ratio is NOT valid.`
    )
  }
  const valid = failed.length === 0 && interleaved!.errors === 0 && interleavedThroughput!.errors === 0
  writeResults({
    ok: valid,
    loadAverageBefore: loadBefore,
    loadAverageAfter: loadAfter,
    rows,
    interleaved,
    interleavedThroughput,
    ratios: {
      syncP50VsBaseline: syncVsBaseline,
      separateSyncVsBaseline,
      syncP99VsBaseline,
      asyncVsBaseline,
      separateAsyncVsBaseline
    },
    otherProgramsSkewed: skewed,
    ...(nodeArgs.length > 0 ? { profileWindows: windows } : {}),
    targets: {
      syncP50VsBaseline: { max: targets.syncP50VsBaseline, value: syncVsBaseline, pass: latencyOk },
      asyncVsBaseline: { min: targets.asyncVsBaseline, value: asyncVsBaseline, pass: throughputOk }
    }
  })
  return { ok: valid }
}
