import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import * as EmbeddedPostgres from "../src/db/EmbeddedPostgres.js"
import { percentile } from "./support/load.js"
import { cpuProfiling, cpuTimeMs, startNode, stopAll, type SwitchyardNode, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendRun } from "./support/runs.js"

/**
 * Schedules at scale (issue 24): BENCH_SCHEDULES (default 10,000) schedules of one agent, all `* * * * *`,
 * so that every one of them is due in the same second each minute, on a cluster of each size in
 * BENCH_SCHEDULE_NODES (default `1,3`) sharing one PostgreSQL. Measured over one minute's burst:
 *   - lag from a tick's `scheduled_for` to its task's insert (`tasks.created_at`), p50/p99/max, and the tasks
 *     inserted in each 100 ms;
 *   - lag to the task being visible (committed), seen by polling every 100 ms: the instant the share of
 *     tasks visible passed 50 %, 99 %, 100 % (the honest figure when inserts wait in a transaction);
 *   - lag to the run's start (`started_at`), p50/p99: the runs are started after the inserts;
 *   - tasks inserted per second over the burst (first to last insert), against the same-run baseline: the
 *     same number of rows inserted into `tasks` by bare SQL, in batches of 500 on one connection (what
 *     the database alone needs for them);
 *   - each node's CPU seconds over the burst, PostgreSQL's, and the 1-minute load average.
 * Target (the issue's, 10,000 schedules on 3 nodes): p99 ≤ 1 s.
 *
 * Two cores run every node, PostgreSQL and this process. BENCH_NODE_QUOTA=<cores> puts each node in its own
 * cgroup held to that CPU quota (the method of /work/shared/tools/scale-probe.mjs: as if each node had a
 * machine of its own; needs root and the cgroup `cpu` controller). BENCH_CPU_PROF=<dir> writes a
 * .cpuprofile per node; the burst's window is printed for bench/support/cpuProfile.ts --from/--to.
 * Results are appended to bench/results/schedules.json.
 */
export const name = "schedules"

const settings = {
  schedules: Number(process.env["BENCH_SCHEDULES"] ?? 10_000),
  nodeCounts: (process.env["BENCH_SCHEDULE_NODES"] ?? "1,3").split(",").map(Number),
  quota: process.env["BENCH_NODE_QUOTA"] === undefined ? null : Number(process.env["BENCH_NODE_QUOTA"]),
  /** The measured minute starts at least this long after the last schedule was made. */
  leadMs: 8000,
  /** How long after the minute its tasks are waited for, at most. */
  settleMs: 40_000,
  pollMs: 100
} as const

const SECRET_KEY = Buffer.alloc(32, 9).toString("base64")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const summary = (lags: ReadonlyArray<number>) => {
  const sorted = [...lags].sort((a, b) => a - b)
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN
  }
}

/** One PostgreSQL for every node of a run: the embedded server, as `npm start` runs it (bench/cluster.ts). */
const startPostgres = async () => {
  const dataDir = tempDir("bench-schedules-pg")
  const scope = Effect.runSync(Scope.make())
  const server = await Effect.runPromise(
    EmbeddedPostgres.make({
      dataDir,
      port: 0,
      settings: {
        max_connections: "300",
        // BENCH_PG_LOG_MS=<ms>: statements slower than that go to pg.log in the data dir, with their duration
        ...(process.env["BENCH_PG_LOG_MS"] === undefined
          ? {}
          : {
            log_min_duration_statement: process.env["BENCH_PG_LOG_MS"],
            log_lock_waits: "on",
            deadlock_timeout: "100ms",
            // and their plans, with the statements their triggers run
            session_preload_libraries: "auto_explain",
            "auto_explain.log_min_duration": process.env["BENCH_PG_LOG_MS"],
            "auto_explain.log_analyze": "on",
            "auto_explain.log_nested_statements": "on"
          })
      }
    }).pipe(Scope.extend(scope))
  )
  const url = Redacted.value(server.url)
  const pid = Number(Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0])
  const keepLog = () => {
    if (process.env["BENCH_PG_LOG_MS"] !== undefined) {
      const kept = Path.join(Os.tmpdir(), `bench-schedules-pg-${Date.now()}.log`)
      Fs.copyFileSync(Path.join(dataDir, "pg.log"), kept)
      console.log(`PostgreSQL's log (statements over ${process.env["BENCH_PG_LOG_MS"]} ms): ${kept}`)
    }
  }
  return { url, pid, keepLog, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** cgroup v1 `cpu` or v2: the node's process held to `cores` (a 10 ms period keeps throttling smooth). */
const cgroups: Array<string> = []
const capCpu = (pid: number, index: number, cores: number) => {
  const v1 = "/sys/fs/cgroup/cpu"
  const isV1 = Fs.existsSync(`${v1}/cpu.cfs_quota_us`)
  const dir = `${isV1 ? v1 : "/sys/fs/cgroup"}/bench-schedules-${process.pid}-${index}`
  if (!Fs.existsSync(dir)) Fs.mkdirSync(dir)
  if (isV1) {
    Fs.writeFileSync(`${dir}/cpu.cfs_period_us`, "10000")
    Fs.writeFileSync(`${dir}/cpu.cfs_quota_us`, String(Math.round(cores * 10_000)))
  } else {
    Fs.writeFileSync(`${dir}/cpu.max`, `${Math.round(cores * 10_000)} 10000`)
  }
  Fs.writeFileSync(`${dir}/cgroup.procs`, String(pid))
  cgroups.push(dir)
}
const removeCgroups = () => {
  for (const dir of cgroups.splice(0)) {
    try {
      Fs.rmdirSync(dir)
    } catch {
      // a process still in it: the directory goes when it exits and the next run's cleanup
    }
  }
}

const startNodes = async (count: number, url: string) => {
  const nodes: Array<SwitchyardNode> = []
  for (let i = 0; i < count; i++) {
    const dataDir = tempDir("bench-schedules-node")
    nodes.push(
      await startNode({
        dataDir,
        logLevel: "warning",
        logFile: Path.join(dataDir, "node.log"),
        expectApiKey: i === 0,
        nodeArgs: cpuProfiling().nodeArgs,
        env: {
          DATABASE_URL: url,
          SWITCHYARD_SECRET_KEY: SECRET_KEY,
          SWITCHYARD_RUNNER_HOST: "127.0.0.1",
          SWITCHYARD_BOOTSTRAP_ON_FIRST_START: i === 0 ? "true" : "false"
        }
      })
    )
  }
  return nodes
}

/**
 * The database's floor for `count` task rows: inserted by bare SQL in batches of 500 on one connection into a
 * copy of `tasks` with its indexes (not its triggers).
 */
const bareInsert = async (db: pg.Pool, count: number, organizationId: string, agentId: string) => {
  await db.query("CREATE TABLE bench_tasks (LIKE tasks INCLUDING DEFAULTS INCLUDING INDEXES)")
  const started = performance.now()
  for (let done = 0; done < count; done += 500) {
    await db.query(
      `INSERT INTO bench_tasks (id, organization_id, agent_id, status, source, user_id, user_email, input,
        agent_version, idempotency_key, shard)
      SELECT gen_random_uuid(), $1, $2, 'pending', 'schedule', 'bench', 'bench@example.com', 'tick', 1,
        'bare ' || $3::int || ' ' || n, 1
      FROM generate_series(1, $4::int) AS n`,
      [organizationId, agentId, done, Math.min(500, count - done)]
    )
  }
  const seconds = (performance.now() - started) / 1000
  await db.query("DROP TABLE bench_tasks")
  return { seconds, perSecond: count / seconds }
}

const measure = async (nodeCount: number, url: string, admin: pg.Pool, pgPid: number) => {
  const database = `schedules_${nodeCount}_${Date.now()}`
  await admin.query(`CREATE DATABASE ${database}`)
  const u = new URL(url)
  u.pathname = `/${database}`
  const nodes = await startNodes(nodeCount, u.toString())
  const db = new pg.Pool({ connectionString: u.toString(), max: 2 })
  try {
    if (settings.quota !== null) nodes.forEach((node, i) => capCpu(node.pid, i, settings.quota!))
    const headers = { "x-api-key": nodes[0]!.apiKey!, "content-type": "application/json" }
    const post = async (path: string, body: unknown) => {
      const r = await fetch(nodes[0]!.baseUrl + path, { method: "POST", headers, body: JSON.stringify(body) })
      if (r.status >= 300) throw new Error(`POST ${path}: ${r.status} ${await r.text()}`)
      return r.json()
    }
    const agent = await post("/v1/agents", {
      name: "ticker",
      model: { provider: "scripted", script: [{ text: "ok" }] }
    })
    const input = { text: "tick", user: { id: "bench", email: "bench@example.com" } }

    console.log(`\n${nodeCount} node(s): creating ${settings.schedules} schedules (every minute)...`)
    // one through the API, the rest copies of it made in the database (each create through the API is
    // audited, and the audit chain of one organization takes its changes one at a time)
    const first = await post("/v1/schedules", {
      name: "s0",
      agent_id: agent.id,
      cron: "* * * * *",
      overlap: "allow",
      input
    })
    const { rows: [org] } = await db.query<{ organization_id: string }>(
      "SELECT organization_id FROM schedules WHERE id = $1",
      [first.id]
    )
    const baseline = await bareInsert(db, settings.schedules, org!.organization_id, agent.id)
    await db.query(
      `INSERT INTO schedules (id, organization_id, agent_id, name, cron, every_ms, timezone, input_text, user_id,
        user_email, enabled, start_at, end_at, jitter_ms, overlap, catchup_window_ms, created_by, created_by_key,
        next_tick, next_run_at, created_at, updated_at)
      SELECT gen_random_uuid(), organization_id, agent_id, 's' || n, cron, every_ms, timezone, input_text, user_id,
        user_email, enabled, start_at, end_at, jitter_ms, overlap, catchup_window_ms, created_by, created_by_key,
        next_tick, next_run_at, created_at, updated_at
      FROM schedules, generate_series(1, $2::int - 1) AS n WHERE id = $1`,
      [first.id, settings.schedules]
    )
    await db.query("VACUUM ANALYZE schedules")
    // the first minute after the copies were made: their next tick
    const { rows: [next] } = await db.query<{ at: Date }>("SELECT min(next_tick) AS at FROM schedules")
    let minute = next!.at
    while (minute.getTime() - Date.now() < settings.leadMs) minute = new Date(minute.getTime() + 60_000)
    console.log(`  measuring the burst of ${minute.toISOString()}...`)
    await sleep(minute.getTime() - 1000 - Date.now())

    const pids = nodes.map((n) => n.pid)
    const cpuBefore = pids.map((pid) => cpuTimeMs([pid], { descendants: false }) ?? Number.NaN)
    const pgBefore = cpuTimeMs([pgPid]) ?? Number.NaN
    const windowFrom = process.hrtime.bigint() / 1000n
    const loadBefore = Os.loadavg()
    // visibility: the tasks of this minute's ticks committed, counted every pollMs
    const seen: Array<{ at: number; count: number }> = []
    const key = `% ${minute.toISOString()}`
    while (Date.now() < minute.getTime() + settings.settleMs) {
      const { rows: [c] } = await db.query<{ n: string }>(
        "SELECT count(*) AS n FROM tasks WHERE source = 'schedule' AND idempotency_key LIKE $1",
        [key]
      )
      const count = Number(c!.n)
      seen.push({ at: Date.now() - minute.getTime(), count })
      if (count >= settings.schedules) break
      await sleep(settings.pollMs)
    }
    const windowTo = process.hrtime.bigint() / 1000n
    const burstSeconds = (Date.now() - (minute.getTime() - 1000)) / 1000
    const cpu = pids.map((pid, i) => ((cpuTimeMs([pid], { descendants: false }) ?? Number.NaN) - cpuBefore[i]!) / 1000)
    const pgCpu = ((cpuTimeMs([pgPid]) ?? Number.NaN) - pgBefore) / 1000
    const load = Os.loadavg()
    // the runs start after the inserts: wait for them (30 s at most) before the rows are read
    for (let waited = 0; waited < 30_000; waited += 500) {
      const { rows: [c] } = await db.query<{ n: string }>(
        `SELECT count(*) AS n FROM tasks
        WHERE source = 'schedule' AND idempotency_key LIKE $1 AND started_at IS NOT NULL`,
        [key]
      )
      if (Number(c!.n) >= settings.schedules) break
      await sleep(500)
    }

    const { rows } = await db.query<{ task_lag: number | null; start_lag: number | null; created: Date | null }>(
      `SELECT extract(epoch FROM t.created_at - k.scheduled_for) * 1000 AS task_lag,
        extract(epoch FROM t.started_at - k.scheduled_for) * 1000 AS start_lag, t.created_at AS created
      FROM schedule_ticks k LEFT JOIN tasks t ON t.id = k.task_id WHERE k.scheduled_for = $1`,
      [minute]
    )
    const { rows: [dupes] } = await db.query<{ n: string }>(
      `SELECT count(*) - count(DISTINCT idempotency_key) AS n FROM tasks
      WHERE source = 'schedule' AND idempotency_key LIKE $1`,
      [key]
    )
    const made = rows.filter((r) => r.task_lag !== null)
    const toTask = summary(made.map((r) => Number(r.task_lag)))
    const toStart = summary(made.filter((r) => r.start_lag !== null).map((r) => Number(r.start_lag)))
    const visibleAt = (share: number) =>
      seen.find((s) => s.count >= Math.ceil(settings.schedules * share))?.at ?? Number.NaN
    const visible = { p50: visibleAt(0.5), p99: visibleAt(0.99), max: visibleAt(1) }
    const created = made.map((r) => r.created!.getTime()).sort((a, b) => a - b)
    const spanS = created.length < 2 ? Number.NaN : (created.at(-1)! - created[0]!) / 1000
    const insertedPerSecond = created.length / Math.max(spanS, 0.001)
    // tasks inserted in each 100 ms after the tick: when the claims' inserts ran
    const insertedEvery100ms = Array.from(
      { length: Math.floor(toTask.max / 100) + 1 },
      (_, i) => made.filter((r) => Math.floor(Number(r.task_lag) / 100) === i).length
    )
    // tasks visible by each half second of the burst: where it stalled, if it did
    const timeline = Array.from(
      { length: Math.ceil((seen.at(-1)?.at ?? 0) / 500) + 1 },
      (_, i) => seen.filter((s) => s.at <= i * 500).at(-1)?.count ?? 0
    )
    const ok = rows.length === settings.schedules && made.length === settings.schedules && Number(dupes!.n) === 0

    console.log(
      `  ${nodeCount} node(s), ${settings.schedules} schedules${
        settings.quota === null ? "" : `, each node capped at ${settings.quota} cores`
      }`
    )
    console.log(
      `  ticks ${rows.length}, tasks ${made.length}, duplicates ${
        dupes!.n
      } (expected ${settings.schedules}, ${settings.schedules}, 0)`
    )
    console.log(
      `  scheduled_for -> task inserted: p50 ${fmt(toTask.p50)} ms, p99 ${fmt(toTask.p99)} ms, max ${
        fmt(toTask.max)
      } ms`
    )
    console.log(
      `  scheduled_for -> task visible (polled): 50% ${fmt(visible.p50)} ms, 99% ${fmt(visible.p99)} ms, all ${
        fmt(visible.max)
      } ms`
    )
    console.log(`  tasks inserted in each 100 ms: ${insertedEvery100ms.join(" ")}`)
    console.log(`  tasks visible by each 0.5 s: ${timeline.join(" ")}`)
    console.log(`  scheduled_for -> run started: p50 ${fmt(toStart.p50)} ms, p99 ${fmt(toStart.p99)} ms`)
    console.log(
      `  tasks inserted/s over the burst: ${fmt(insertedPerSecond)} (bare SQL insert of as many: ${
        fmt(baseline.perSecond)
      }/s, ${fmt(ratio(insertedPerSecond, baseline.perSecond), 2)}x)`
    )
    console.log(
      `  CPU s over the ${fmt(burstSeconds, 1)} s burst: nodes ${cpu.map((c) => fmt(c, 2)).join(", ")}; PostgreSQL ${
        fmt(pgCpu, 2)
      }`
    )
    console.log(
      `  load average before ${loadBefore.map((l) => l.toFixed(2)).join(" ")}, after ${
        load.map((l) => l.toFixed(2)).join(" ")
      }`
    )
    console.log(
      `  target p99 <= 1000 ms (to insert, and to visible): ${
        toTask.p99 <= 1000 && visible.p99 <= 1000 ? "PASS" : "MISS"
      }`
    )
    if (cpuProfiling().dir !== undefined) console.log(`  profile window: --from ${windowFrom} --to ${windowTo}`)
    return {
      nodes: nodeCount,
      ok,
      ticks: rows.length,
      tasks: made.length,
      duplicates: Number(dupes!.n),
      lagToTaskMs: toTask,
      lagToVisibleMs: visible,
      insertedEvery100ms,
      visibleEveryHalfSecond: timeline,
      lagToStartMs: toStart,
      insertedPerSecond,
      bareInsertPerSecond: baseline.perSecond,
      insertVsBare: ratio(insertedPerSecond, baseline.perSecond),
      burstSeconds,
      nodeCpuSeconds: cpu,
      postgresCpuSeconds: pgCpu,
      loadAverage: { before: loadBefore, after: load }
    }
  } finally {
    await db.end()
    for (const node of nodes) await node.stop()
    removeCgroups()
  }
}

export const run = async () => {
  warnIfBusy()
  const postgres = await startPostgres()
  const admin = new pg.Pool({ connectionString: postgres.url, max: 1 })
  const results: Array<Awaited<ReturnType<typeof measure>>> = []
  try {
    for (const count of settings.nodeCounts) results.push(await measure(count, postgres.url, admin, postgres.pid))
  } finally {
    await admin.end()
    postgres.keepLog()
    await stopAll()
    await postgres.close()
  }
  appendRun(name, settings, { results })
  return { ok: results.every((r) => r.ok) }
}
