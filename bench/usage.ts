import * as Fs from "node:fs"
import * as Path from "node:path"
import pg from "pg"
import { FOLD_MARK, FOLDED_THROUGH } from "../src/usage/UsageRepo.js"
import { measureThroughput, percentile, type Target } from "./support/load.js"
import { postgresOf, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendToList } from "./support/runs.js"

/**
 * Usage reports (issue 24), on one node, in one run:
 *   - cost: synchronous invokes (a scripted model that answers at once) from 16 producers, in blocks with the
 *     node's usage folder running, then off (the bench holds the fold's advisory lock, so the node's rounds
 *     find it taken), which side first alternating. The rollups are kept off the task path (migration 0022):
 *     what they cost the tasks is the folder's work, which a block with it running also pays for the backlog
 *     of the block before. Tasks/s with the folder over tasks/s without; the median of the rounds' ratios
 *     (each round's two blocks saw the same minute of a noisy machine);
 *   - seed: 1,000,000 tasks' worth of rollups over the last 30 days in the node's organization, realistic in
 *     shape (200 users, each on 2 of 20 agents, each agent on one model; 1–3 model calls and one connector
 *     call per task, 3 sources): a sample of `sampleTasks` written as the API writes them (tasks inserted,
 *     model calls recorded, tasks ended: then folded by the node from the event log and the tables), the rest aggregated by
 *     generate_series straight into the rollups, with the same distribution;
 *   - read: `GET /v1/usage` over HTTP for those 30 days, in several shapes, `reads` times each: p50 and p99.
 * Each run is appended to bench/results/usage.json.
 */
export const name = "usage"

const settings = {
  tasks: 1_000_000,
  sampleTasks: 20_000,
  days: 30,
  users: 200,
  agents: 20,
  reads: 60,
  cost: { producers: 16, rounds: 6, blockMs: 4000, skipMs: 1000, warmupMs: 4000 }
} as const

/** `BENCH_USAGE=cost` or `read`: only that part (the other takes minutes). */
const only = process.env.BENCH_USAGE

const targets = { readP99Ms: 100, tasksWithRollupsVsWithout: 0.95 } as const

/** The fold's advisory lock (src/usage/UsageRepo.ts): held by the bench, the node's folder is off. */
const FOLD_LOCK = 0x5717c4_20

/** The folder on (the lock released) or off (held by the bench's own connection). */
const folderSwitch = async (pool: pg.Pool) => {
  const holder = await pool.connect()
  let held = false
  return {
    set: async (running: boolean) => {
      if (running === !held) return
      await holder.query(running ? "SELECT pg_advisory_unlock($1)" : "SELECT pg_advisory_lock($1)", [FOLD_LOCK])
      held = !running
    },
    release: () => holder.release()
  }
}

/** Waits until the node folded what committed before the call. */
const waitForFold = async (pool: pg.Pool) => {
  const { rows: [{ mark }] } = await pool.query<{ mark: string }>(FOLD_MARK)
  while ((await pool.query<{ done: boolean }>(FOLDED_THROUGH, [mark])).rows[0]?.done !== true) {
    await new Promise((r) => setTimeout(r, 200))
  }
}

const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length
const median = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)

/**
 * The write path as before 0022 (the third arm, "bare"): the xid columns' default a constant and their
 * indexes gone, so what 0022 adds to every model and connector call's insert shows. Rows written bare carry
 * xid 0 and are never folded (a bench-only state).
 */
/** `BENCH_USAGE_BARE=index` or `default`: the bare arm takes away only that (to tell their costs apart). */
const bareMode = process.env.BENCH_USAGE_BARE ?? "all"

const setBare = async (pool: pg.Pool, bare: boolean) => {
  for (const [table, key] of [["llm_usage", "task_id, seq"], ["connector_invocations", "id"]] as const) {
    if (bare) {
      if (bareMode !== "index") await pool.query(`ALTER TABLE ${table} ALTER COLUMN xid SET DEFAULT '0'`)
      if (bareMode !== "default") await pool.query(`DROP INDEX IF EXISTS ${table}_xid`)
    } else {
      await pool.query(`CREATE INDEX IF NOT EXISTS ${table}_xid ON ${table} (xid, ${key}) WHERE xid > '0'::xid8`)
      await pool.query(`ALTER TABLE ${table} ALTER COLUMN xid SET DEFAULT pg_current_xact_id()`)
    }
  }
}

type Arm = "on" | "off" | "bare"

const measureCost = async (target: Target, pool: pg.Pool) => {
  const { blockMs, producers, rounds, skipMs, warmupMs } = settings.cost
  const counted: Record<Arm, Array<number>> = { on: [], off: [], bare: [] }
  let errors = 0
  const folder = await folderSwitch(pool)
  await measureThroughput(target, { concurrency: producers, warmupMs: 0, durationMs: warmupMs })
  const orders: ReadonlyArray<ReadonlyArray<Arm>> = [["on", "off", "bare"], ["bare", "off", "on"], [
    "off",
    "on",
    "bare"
  ], ["bare", "on", "off"]]
  for (let round = 0; round < rounds; round++) {
    for (const arm of orders[round % orders.length]!) {
      await folder.set(arm === "on")
      await setBare(pool, arm === "bare")
      const result = await measureThroughput(target, {
        concurrency: producers,
        warmupMs: skipMs,
        durationMs: blockMs - skipMs
      })
      errors += result.errors
      counted[arm].push(result.rps)
      process.stdout.write(
        `    ${arm === "bare" ? "bare (no xid index)" : `folder ${arm}`}: ${fmt(result.rps, 0)} tasks/s\n`
      )
    }
  }
  await setBare(pool, false)
  await folder.set(true)
  folder.release()
  const ratios = counted.on.map((on, i) => ratio(on, counted.off[i]!))
  const bareRatios = counted.off.map((off, i) => ratio(off, counted.bare[i]!))
  return {
    compared: "usage folder running vs off (migration 0022: no usage triggers); off vs bare (no xid column cost)",
    tasksPerSecondWithRollups: mean(counted.on),
    tasksPerSecondWithout: mean(counted.off),
    tasksPerSecondBare: mean(counted.bare),
    ratio: median(ratios),
    ratioOfMeans: ratio(mean(counted.on), mean(counted.off)),
    roundRatios: ratios,
    xidColumnRatio: median(bareRatios),
    onVsBareRatio: median(counted.on.map((on, i) => ratio(on, counted.bare[i]!))),
    blocks: counted,
    errors
  }
}

/**
 * The synthetic tasks, numbered g: everything derived from g by hashing, so the sample and the bulk share one
 * distribution. Columns: created_at, agent (uuid), user, source, status, duration_ms, calls, model, provider.
 */
const synthetic = (from: string, to: string) => `
  SELECT g,
    now() - make_interval(secs => (abs(hashint4(g)) % (${settings.days} * 86400))) AS created_at,
    ('00000000-0000-4000-8000-' || lpad(to_hex(a.n), 12, '0'))::uuid AS agent_id,
    'user-' || u.n AS user_id,
    (ARRAY['api', 'api', 'mcp', 'schedule'])[1 + abs(hashint4(g + 7)) % 4] AS source,
    CASE WHEN abs(hashint4(g + 11)) % 100 < 92 THEN 'completed'
      WHEN abs(hashint4(g + 11)) % 100 < 98 THEN 'error' ELSE 'cancelled' END AS status,
    (200 * exp((abs(hashint4(g + 13)) % 1000) / 180.0))::float8 AS duration_ms,
    1 + abs(hashint4(g + 17)) % 3 AS calls,
    (ARRAY['gpt-4o', 'gpt-4o-mini', 'claude-sonnet', 'claude-haiku'])[1 + a.n % 4] AS model,
    (ARRAY['openai', 'openai', 'anthropic', 'anthropic'])[1 + a.n % 4] AS provider,
    (abs(hashint4(g + 19)) % 5) AS connector,
    (ARRAY[200, 200, 200, 200, 200, 200, 201, 404, 500, NULL])[1 + abs(hashint4(g + 23)) % 10] AS status_code
  FROM generate_series(${from}, ${to}) g,
    LATERAL (SELECT abs(hashint4(g + 3)) % ${settings.users} AS n) u,
    LATERAL (SELECT (u.n * 7 + abs(hashint4(g + 5)) % 2) % ${settings.agents} AS n) a`

/** The sample: written as the API writes it (four statements per 2,000 tasks), for the node to fold. */
const seedSample = async (pool: pg.Pool, organizationId: string) => {
  const chunk = 2000
  for (let first = 1; first <= settings.sampleTasks; first += chunk) {
    const last = Math.min(settings.sampleTasks, first + chunk - 1)
    const client = await pool.connect()
    try {
      await client.query("BEGIN")
      await client.query(
        `CREATE TEMP TABLE sample ON COMMIT DROP AS
         SELECT gen_random_uuid() AS id, * FROM (${synthetic(String(first), String(last))}) s`
      )
      await client.query(
        `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, created_at)
         SELECT id, $1, agent_id, 'executing', source, user_id, 'u@example.com', 'hi', created_at FROM sample`,
        [organizationId]
      )
      // the model calls, then the ends, then the connector calls, as separate statements (as the runs make them)
      await client.query(
        `INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens, output_tokens,
           cached_tokens, cost_usd, at)
         SELECT s.id, c, $1, s.agent_id, s.provider, s.model, 1000 + abs(hashint4(s.g * 3 + c)) % 4000,
           100 + abs(hashint4(s.g * 5 + c)) % 900, abs(hashint4(s.g * 7 + c)) % 500, 0.002, s.created_at
         FROM sample s, generate_series(1, s.calls) c`,
        [organizationId]
      )
      await client.query(
        `UPDATE tasks SET status = s.status, finished_at = s.created_at + make_interval(secs => s.duration_ms / 1000)
         FROM sample s WHERE tasks.id = s.id`
      )
      await client.query(
        `INSERT INTO connector_invocations (organization_id, connector_id, connection_id, operation_id, task_id, status,
           duration_ms, request_bytes, created_at)
         SELECT $1, ('00000000-0000-4000-9000-' || lpad(to_hex(s.connector), 12, '0'))::uuid, gen_random_uuid(), 'op',
           s.id::text, s.status_code, 30, 100, s.created_at
         FROM sample s`,
        [organizationId]
      )
      await client.query("COMMIT")
    } finally {
      client.release()
    }
  }
}

/** The bulk: the remaining tasks aggregated straight into the rollups by hour and by day. */
const seedBulk = async (pool: pg.Pool, organizationId: string) => {
  const from = String(settings.sampleTasks + 1)
  const to = String(settings.tasks)
  await pool.query(`CREATE TABLE bench_usage_bulk AS ${synthetic(from, to)}`)
  for (const grain of ["hour", "hour_all_users", "day", "day_all_users"]) {
    const period = `date_trunc('${grain.startsWith("hour") ? "hour" : "day"}', created_at, 'UTC')`
    const user = grain.endsWith("_all_users") ? "''::text" : "user_id"
    await pool.query(
      `INSERT INTO usage_model_rollups (grain, period, organization_id, agent_id, user_id, source, provider, model, calls,
         input_tokens, output_tokens, cached_tokens, cost_usd)
       SELECT '${grain}', ${period}, $1, agent_id, ${user}, source, provider, model, sum(calls), sum(calls * 3000),
         sum(calls * 550), sum(calls * 250), sum(calls * 0.002)
       FROM bench_usage_bulk GROUP BY 2, 4, 5, 6, 7, 8`,
      [organizationId]
    )
    await pool.query(
      `INSERT INTO usage_task_rollups (grain, period, organization_id, agent_id, user_id, source, completed, error,
         cancelled, duration_ms, duration_histogram)
       SELECT '${grain}', ${period}, $1, agent_id, ${user}, source, count(*) FILTER (WHERE status = 'completed'),
         count(*) FILTER (WHERE status = 'error'), count(*) FILTER (WHERE status = 'cancelled'), sum(duration_ms),
         ARRAY[${Array.from({ length: 48 }, (_, i) => `count(*) FILTER (WHERE b = ${i + 1})`).join(", ")}]::int[]
       FROM (SELECT *, usage_duration_bucket(duration_ms) AS b FROM bench_usage_bulk) x GROUP BY 2, 4, 5, 6`,
      [organizationId]
    )
    await pool.query(
      `INSERT INTO usage_connector_rollups (grain, period, organization_id, connector_id, agent_id, user_id, source,
         status_2xx, status_3xx, status_4xx, status_5xx, failed, duration_ms)
       SELECT '${grain}', ${period}, $1, ('00000000-0000-4000-9000-' || lpad(to_hex(connector), 12, '0'))::uuid,
         agent_id, ${user}, source, count(*) FILTER (WHERE status_code < 300),
         count(*) FILTER (WHERE status_code BETWEEN 300 AND 399), count(*) FILTER (WHERE status_code BETWEEN 400 AND 499),
         count(*) FILTER (WHERE status_code >= 500), count(*) FILTER (WHERE status_code IS NULL), count(*) * 30
       FROM bench_usage_bulk GROUP BY 2, 4, 5, 6, 7`,
      [organizationId]
    )
  }
  await pool.query("DROP TABLE bench_usage_bulk")
  await pool.query("VACUUM ANALYZE usage_model_rollups, usage_task_rollups, usage_connector_rollups")
}

const timeReads = async (baseUrl: string, apiKey: string, query: string) => {
  const times: Array<number> = []
  let body: any
  for (let i = 0; i < settings.reads; i++) {
    const started = performance.now()
    const response = await fetch(`${baseUrl}/v1/usage${query}`, { headers: { "x-api-key": apiKey } })
    const text = await response.text()
    times.push(performance.now() - started)
    if (response.status !== 200) throw new Error(`GET /v1/usage${query}: ${response.status} ${text}`)
    body = query.includes("format=csv") ? text : JSON.parse(text)
  }
  // the first reads warm the node's plans and PostgreSQL's caches
  const sorted = times.slice(5).sort((a, b) => a - b)
  const rows = typeof body === "string" ? body.split("\r\n").length - 2 : body.rows.length
  const tasks = typeof body === "string"
    ? Number.NaN
    : body.rows.reduce((n: number, r: any) => n + r.tasks_completed + r.tasks_error + r.tasks_cancelled, 0)
  return { query, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), rows, tasks }
}

const append = (run: Record<string, unknown>) => appendToList(name, settings, run)

export const run = async () => {
  warnIfBusy()
  const tmp = tempDir("bench-usage-")
  const dataDir = Path.join(tmp, "data")
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    const apiKey = node.apiKey!
    const pool = new pg.Pool({ ...postgresOf(dataDir), user: "postgres", database: "postgres", max: 4 })
    try {
      const me = await (await fetch(`${node.baseUrl}/v1/me`, { headers: { "x-api-key": apiKey } })).json() as any
      const organizationId: string = me.organization_id ?? me.organization?.id
      const created = await fetch(`${node.baseUrl}/v1/agents`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "bench", model: { provider: "scripted", script: [{ text: "done" }] } })
      })
      const agent = await created.json() as { id: string }
      console.log(`Cost: sync invokes from ${settings.cost.producers} producers, usage folder on and off in turns`)
      const cost = only !== undefined && only !== "cost" ? undefined : await measureCost({
        name: "sync invoke",
        url: `${node.baseUrl}/v1/agents/${agent.id}/invoke`,
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json" },
        body: JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })
      }, pool)
      if (cost !== undefined) {
        console.log(
          `  folder running ${fmt(cost.tasksPerSecondWithRollups, 0)} tasks/s, off ${
            fmt(cost.tasksPerSecondWithout, 0)
          } tasks/s (means); median of the rounds' ratios ${
            fmt(cost.ratio, 3)
          }x — target ≥ ${targets.tasksWithRollupsVsWithout}x: ${
            cost.ratio >= targets.tasksWithRollupsVsWithout ? "PASS" : "MISS"
          }; bare (no xid index) ${fmt(cost.tasksPerSecondBare, 0)} tasks/s: off/bare ${
            fmt(cost.xidColumnRatio, 3)
          }x, running/bare ${fmt(cost.onVsBareRatio, 3)}x`
        )
      }
      if (only === "cost") {
        append({ ok: cost!.errors === 0, bareMode, cost })
        return { ok: cost!.errors === 0 }
      }

      console.log(`Seed: ${settings.sampleTasks} tasks folded by the node, the rest of ${settings.tasks} in bulk`)
      // the bulk first: the sample's folds then add to its rows, as folds do
      let started = performance.now()
      await seedBulk(pool, organizationId)
      const bulkSeconds = (performance.now() - started) / 1000
      started = performance.now()
      await seedSample(pool, organizationId)
      const sampleSeconds = (performance.now() - started) / 1000
      // the node folds every second; wait until it folded the sample
      started = performance.now()
      await waitForFold(pool)
      const foldSeconds = (performance.now() - started) / 1000
      const { rows: [sampleShape] } = await pool.query(
        `SELECT (SELECT count(*) FROM usage_task_rollups WHERE organization_id = $1 AND grain = 'day')::int AS day_rows,
           (SELECT count(*) FROM usage_task_rollups WHERE organization_id = $1 AND grain = 'hour')::int AS hour_rows`,
        [organizationId]
      )
      const { rows: [size] } = await pool.query(
        `SELECT (SELECT count(*) FROM usage_model_rollups WHERE grain = 'day')::int AS model_day_rows,
           (SELECT count(*) FROM usage_model_rollups WHERE grain = 'hour')::int AS model_hour_rows,
           (SELECT count(*) FROM usage_task_rollups WHERE grain = 'day')::int AS task_day_rows,
           (SELECT count(*) FROM usage_task_rollups WHERE grain = 'hour')::int AS task_hour_rows,
           (SELECT count(*) FROM usage_connector_rollups WHERE grain = 'day')::int AS connector_day_rows,
           (SELECT count(*) FROM usage_connector_rollups WHERE grain = 'hour')::int AS connector_hour_rows,
           (SELECT sum(completed + error + cancelled) FROM usage_task_rollups WHERE grain = 'day')::int AS tasks`
      )
      console.log(
        `  sample ${
          fmt(sampleSeconds, 1)
        } s (${sampleShape.day_rows} day rows, ${sampleShape.hour_rows} hour rows of ` +
          `tasks), folded ${fmt(foldSeconds, 1)} s after, bulk ${fmt(bulkSeconds, 1)} s; rollups: ${
            JSON.stringify(size)
          }`
      )

      console.log(`Read: GET /v1/usage over the last ${settings.days} days, ${settings.reads} times each`)
      const reads = []
      for (
        const query of [
          "",
          "?group_by=agent",
          "?group_by=model,provider",
          "?group_by=source&bucket=month",
          "?user_id=user-7",
          "?group_by=agent,user",
          "?bucket=hour",
          "?format=csv&group_by=agent"
        ]
      ) {
        const r = await timeReads(node.baseUrl, apiKey, query)
        reads.push(r)
        console.log(
          `  ${(query || "(defaults: bucket=day)").padEnd(32)} p50 ${fmt(r.p50Ms, 1)} ms, p99 ${fmt(r.p99Ms, 1)} ms, ` +
            `${r.rows} rows, ${Number.isNaN(r.tasks) ? "" : `${r.tasks} tasks`}`
        )
      }
      const headline = reads[0]!
      console.log(
        `  30 days over ${headline.tasks} tasks: p99 ${fmt(headline.p99Ms, 1)} ms — target ≤ ${targets.readP99Ms} ms: ${
          headline.p99Ms <= targets.readP99Ms ? "PASS" : "MISS"
        }`
      )
      const ok = (cost?.errors ?? 0) === 0
      append({
        ok,
        bareMode,
        cost,
        seed: { sampleSeconds, foldSeconds, bulkSeconds, sampleShape, size },
        reads,
        targets
      })
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
