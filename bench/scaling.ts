import { Effect, Exit, Redacted, Scope } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import pg from "pg"
import { Agent } from "undici"
import * as EmbeddedPostgres from "../src/db/EmbeddedPostgres.js"
import { obtainTokens, openSession, PASSWORD, setPassword } from "../test/mcp/support.js"
import type { TestNode } from "../test/support/TestNode.js"
import { cpuTimeMs, freePort, repoRoot, tempDir } from "./support/processes.js"
import { fmt, machine, warnIfBusy } from "./support/report.js"

/**
 * Scale-out: N nodes on one PostgreSQL, each node held to the same CPU quota in its own cgroup (v1 `cpu` or
 * v2 `cpu.max`), as if each had a machine of its own; PostgreSQL and the load generator are not capped. For
 * each workload and node count: tasks (or calls) per second, and the scaling efficiency T_N / (N × T_1) of
 * the same run (1.0 is linear); per unit of work also each node's CPU, PostgreSQL statements and commits.
 * Workloads: async (invoke ?asynchronous=true on one node, `GET /v1/tasks/{id}?wait=30` on the next), sync
 * (invoke), connector (a connector invoke: stateless, the control), mcp (MCP `tools/call` of
 * invoke_operation), budget (async with one agent that has a budget; its spend is checked against the cap).
 * Results are appended to bench/results/scaling.json with the spread over the runs. Needs root (cgroups).
 * Settings from the environment: SCALING_NODES=1,2,3,4 SCALING_MODES=async,sync,connector,mcp,budget
 * SCALING_RUNS=3 SCALING_QUOTA=0.2 SCALING_SECS=8 SCALING_WARMUP_SECS=2 SCALING_PRODUCERS=32; SCALING_ROOT=<a
 * checkout> runs that tree's nodes instead (a before/after comparison in the same conditions);
 * SCALING_CPU_PROF=<dir> profiles. SCALING_PRODUCERS_PER_NODE=<k> gives each measurement k producers per node
 * instead of SCALING_PRODUCERS in all: the capacity a node adds when the load grows with the cluster, where
 * the fixed 32 (the issue's probe) also measure a node's cost at a third of the load.
 *
 * Each measurement also says what the whole machine did over its window: how busy its CPUs were, and the
 * shares of PostgreSQL and of this process (the load generator). A node held to 0.2 CPU warms its JIT for
 * about a minute, and a warm one does 2-3 times the tasks of a cold one; when the nodes then sit below their
 * quota while the machine is busy, the figure is the machine's, not the cluster's (docs/capacity.md).
 */
export const name = "scaling"

const env = (key: string, fallback: string) => process.env[key] ?? fallback
const settings = {
  quota: Number(env("SCALING_QUOTA", "0.2")),
  nodeCounts: env("SCALING_NODES", "1,2,3,4").split(",").map(Number),
  modes: env("SCALING_MODES", "async,sync,connector,mcp,budget").split(",") as Array<Mode>,
  runs: Number(env("SCALING_RUNS", "3")),
  producers: Number(env("SCALING_PRODUCERS", "32")),
  /** 0: `producers` in all, whatever the node count. */
  producersPerNode: Number(env("SCALING_PRODUCERS_PER_NODE", "0")),
  warmupMs: Number(env("SCALING_WARMUP_SECS", "2")) * 1000,
  durationMs: Number(env("SCALING_SECS", "8")) * 1000,
  /** After every node is ready: shards settle before the caps and the load. */
  settleMs: 3000,
  /** cgroup period: a short one keeps throttling smooth. */
  periodUs: 10_000,
  /** The budgeted agent's cap, and the scripted model's price (USD per million tokens) that spends it. */
  budget: { limit_usd: 1000, price: 1 }
}
type Mode = "async" | "sync" | "connector" | "mcp" | "budget"
const root = Path.resolve(env("SCALING_ROOT", repoRoot))
const cpuProfDir = process.env["SCALING_CPU_PROF"]
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** The producers of a measurement on `count` nodes. */
const producersFor = (count: number) =>
  settings.producersPerNode > 0 ? settings.producersPerNode * count : settings.producers
const dispatcher = new Agent({ connections: 128, keepAliveTimeout: 10_000 })

// --- CPU caps: one cgroup per node ---

const V1 = "/sys/fs/cgroup/cpu"
const V2 = "/sys/fs/cgroup"
const cgroupVersion = Fs.existsSync(`${V1}/cpu.cfs_quota_us`)
  ? 1
  : Fs.existsSync(`${V2}/cgroup.controllers`)
  ? 2
  : undefined
const groups = new Set<string>()

/** Node processes and the PostgreSQL data dir: killed on any exit (Ctrl-C included), so none outlives the bench. */
const children = new Set<ChildProcess>()
let postgresDir: string | undefined
process.once("exit", () => {
  for (const child of children) child.kill("SIGKILL")
  try {
    const pid = Number(
      Fs.readFileSync(Path.join(postgresDir ?? "/nonexistent", "pg", "postmaster.pid"), "utf8").split("\n")[0]
    )
    if (pid > 0) process.kill(pid, "SIGQUIT")
  } catch {
    // not running
  }
  removeGroups()
})

const cap = (pid: number, index: number) => {
  const dir = `${cgroupVersion === 1 ? V1 : V2}/switchyard-scaling-${index}`
  if (!Fs.existsSync(dir)) Fs.mkdirSync(dir)
  const quotaUs = String(Math.round(settings.quota * settings.periodUs))
  if (cgroupVersion === 2) {
    // the cpu controller must be on for the root's children
    if (!Fs.readFileSync(`${V2}/cgroup.subtree_control`, "utf8").includes("cpu")) {
      Fs.writeFileSync(`${V2}/cgroup.subtree_control`, "+cpu")
    }
    Fs.writeFileSync(`${dir}/cpu.max`, `${quotaUs} ${settings.periodUs}`)
  } else {
    Fs.writeFileSync(`${dir}/cpu.cfs_period_us`, String(settings.periodUs))
    Fs.writeFileSync(`${dir}/cpu.cfs_quota_us`, quotaUs)
  }
  Fs.writeFileSync(`${dir}/cgroup.procs`, String(pid))
  groups.add(dir)
}
const removeGroups = () => {
  for (const dir of groups) {
    try {
      Fs.rmdirSync(dir)
    } catch {
      // still has a process: it is gone in a moment, and the next run reuses the group
    }
  }
}

/** CPU seconds (user + system) of one process, from /proc/<pid>/stat. */
const cpuSeconds = (pid: number) => {
  const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(f[11]) + Number(f[12])) / 100
}

// --- PostgreSQL: one server for every run, a database per measurement ---

const startPostgres = async () => {
  const scope = Effect.runSync(Scope.make())
  postgresDir = tempDir("bench-scaling-pg")
  const server = await Effect.runPromise(
    EmbeddedPostgres.make({
      dataDir: postgresDir,
      port: 0,
      settings: { max_connections: "400", shared_preload_libraries: "pg_stat_statements" }
    }).pipe(Scope.extend(scope))
  )
  return { url: Redacted.value(server.url), close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** The PostgreSQL server's CPU time so far (ms), its backends included. */
const postgresCpuMs = () => {
  try {
    const pid = Number(Fs.readFileSync(Path.join(postgresDir!, "pg", "postmaster.pid"), "utf8").split("\n")[0])
    return cpuTimeMs([pid]) ?? Number.NaN
  } catch {
    return Number.NaN
  }
}

/** Statements (by pg_stat_statements) and commits of one database since the last `reset`. */
const databaseWork = (admin: pg.Pool, database: string) => {
  const commits = async () =>
    Number(
      (await admin.query("SELECT xact_commit FROM pg_stat_database WHERE datname = $1", [database])).rows[0]
        .xact_commit
    )
  let commits0 = 0
  return {
    reset: async () => {
      await admin.query("SELECT pg_stat_statements_reset()")
      commits0 = await commits()
    },
    read: async () => {
      const rows = (await admin.query(
        `SELECT s.calls::int AS calls, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 70) AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1
         ORDER BY s.calls DESC`,
        [database]
      )).rows as Array<{ calls: number; query: string }>
      return {
        statements: rows.reduce((a, r) => a + r.calls, 0),
        top: rows.slice(0, 6),
        commits: (await commits()) - commits0
      }
    }
  }
}

// --- nodes ---

interface ScaleNode {
  readonly base: string
  readonly child: ChildProcess
}

const startNodes = async (count: number, databaseUrl: string, publicUrl: string) => {
  const nodes: Array<ScaleNode> = []
  let apiKey = ""
  for (let i = 0; i < count; i++) {
    const port = i === 0 ? Number(new URL(publicUrl).port) : await freePort()
    const nodeEnv: Record<string, string> = {
      ...Object.fromEntries(
        Object.entries(process.env).filter(([k, v]) =>
          !k.startsWith("SWITCHYARD_") && k !== "DATABASE_URL" && v !== undefined
        )
      ) as Record<string, string>,
      DATABASE_URL: databaseUrl,
      SWITCHYARD_HTTP_PORT: String(port),
      SWITCHYARD_RUNNER_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_HOST: "127.0.0.1",
      // one public address for the cluster, as behind a load balancer: an MCP token is for it
      SWITCHYARD_PUBLIC_URL: publicUrl,
      SWITCHYARD_SECRET_KEY: "b".repeat(64),
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_LOG_LEVEL: "warning",
      SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
      SWITCHYARD_MODEL_PRICES: JSON.stringify({
        scripted: { input: settings.budget.price, output: settings.budget.price }
      })
    }
    if (i === 0) {
      const out = execFileSync(process.execPath, [
        "bin/switchyard.js",
        "bootstrap",
        "--org",
        "Scale",
        "--email",
        "scale@example.test",
        "--json"
      ], { cwd: root, env: nodeEnv, encoding: "utf8" })
      apiKey = JSON.parse(out.trim().split("\n").reverse().find((l) => l.startsWith("{"))!).api_key
    }
    const profile = cpuProfDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${Path.resolve(cpuProfDir)}`]
    // SCALING_NODE_ARGS: more node flags, e.g. --perf-basic-prof for `perf record`
    profile.push(...(process.env["SCALING_NODE_ARGS"] ?? "").split(" ").filter((a) => a !== ""))
    // SCALING_LOGS=<dir>: each node's log there
    const logs = process.env["SCALING_LOGS"]
    const log = logs === undefined ? "ignore" : Fs.openSync(Path.join(logs, `node-${count}-${i}.log`), "a")
    const child = spawn(process.execPath, [...profile, "bin/switchyard.js", "serve"], {
      cwd: root,
      env: { ...nodeEnv, ...(logs === undefined ? {} : { SWITCHYARD_LOG_LEVEL: "info" }) },
      stdio: ["ignore", "ignore", log]
    })
    if (typeof log === "number") Fs.closeSync(log)
    children.add(child)
    child.once("exit", () => children.delete(child))
    nodes.push({ base: `http://127.0.0.1:${port}`, child })
  }
  for (const node of nodes) {
    let ready = false
    for (let t = 0; t < 480 && !ready; t++) {
      ready = await fetch(`${node.base}/readyz`).then((r) => r.ok, () => false)
      if (!ready) await sleep(250)
    }
    if (!ready) throw new Error(`node ${node.base} was not ready within 2 minutes`)
  }
  return { nodes, apiKey }
}

const stopNodes = async (nodes: ReadonlyArray<ScaleNode>) => {
  for (const node of nodes) node.child.kill("SIGTERM")
  for (const node of nodes) {
    for (let t = 0; t < 300 && node.child.exitCode === null && node.child.signalCode === null; t++) await sleep(100)
    if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill("SIGKILL")
  }
}

const api = async (base: string, key: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(base + path, {
    method,
    headers: { "x-api-key": key, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher
  } as RequestInit)
  const text = await response.text()
  let json: any = null
  try {
    json = JSON.parse(text)
  } catch {
    // not JSON: the status says enough
  }
  return { status: response.status, json }
}

/** An upstream for the connector workloads: answers every call with a small JSON body. */
const startUpstream = async () => {
  const server = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{\"ok\":true}")
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() }
}

/** The machine's busy and total CPU time (jiffies, every CPU), from /proc/stat. */
const machineTicks = () => {
  const fields = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0)
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0)
  return { busy: total - idle, total }
}

// --- workloads ---

/** One unit of work, sent to the cluster starting at node `i` (round-robin); true when it succeeded. */
type Work = (nodes: ReadonlyArray<ScaleNode>, i: () => number) => Promise<boolean>

const invokeBody = { input: { text: "hi", user: { id: "u1", email: "u1@example.test" } } }

const prepare = async (
  mode: Mode,
  nodes: ReadonlyArray<ScaleNode>,
  key: string,
  databaseUrl: string,
  publicUrl: string,
  upstreamUrl: string
): Promise<Work> => {
  const base = nodes[0]!.base
  const scripted = { provider: "scripted", script: [{ text: "done" }] }
  if (mode === "async" || mode === "sync" || mode === "budget") {
    const agent = await api(base, key, "POST", "/v1/agents", {
      name: "scale",
      model: scripted,
      ...(mode === "budget" ? { budget: { limit_usd: settings.budget.limit_usd, period: "total" } } : {})
    })
    if (agent.status !== 201) throw new Error(`POST /v1/agents: ${agent.status} ${JSON.stringify(agent.json)}`)
    const invoke = `/v1/agents/${agent.json.id}/invoke`
    if (mode === "sync") {
      return async (n, i) =>
        (await api(n[i() % n.length]!.base, key, "POST", invoke, invokeBody)).json?.status === "completed"
    }
    return async (n, i) => {
      const accepted = await api(n[i() % n.length]!.base, key, "POST", `${invoke}?asynchronous=true`, invokeBody)
      if (accepted.status !== 202) return false
      const ended = await api(n[i() % n.length]!.base, key, "GET", `/v1/tasks/${accepted.json.id}?wait=30`)
      return ended.json?.status === "completed"
    }
  }
  const connector = await api(base, key, "POST", "/v1/tools/connectors", {
    spec: {
      openapi: "3.0.3",
      info: { title: "Up", version: "1" },
      servers: [{ url: upstreamUrl }],
      paths: { "/ping": { get: { operationId: "ping", responses: { "200": { description: "ok" } } } } }
    }
  })
  const connection = await api(base, key, "POST", `/v1/tools/connectors/${connector.json.id}/connections`, {
    name: "up",
    credentials: { type: "none" }
  })
  if (mode === "connector") {
    const path = `/v1/tools/connectors/${connector.json.id}/connections/${connection.json.id}/ping`
    return async (n, i) => (await api(n[i() % n.length]!.base, key, "POST", path, {})).status === 200
  }
  // mcp: a bearer token from the OAuth flow and a session (both in PostgreSQL: any node takes them)
  const me = await api(base, key, "GET", "/v1/me")
  await setPassword({ databaseUrl } as TestNode, me.json.user.email, PASSWORD)
  const resource = `${publicUrl}/mcp/`
  const { tokens } = await obtainTokens({ baseUrl: base } as TestNode, me.json.user.email, {
    password: PASSWORD,
    resource
  })
  const session = await openSession(base, tokens.access_token)
  const headers = {
    authorization: `Bearer ${tokens.access_token}`,
    "mcp-session-id": session,
    "mcp-protocol-version": "2025-11-25",
    accept: "application/json, text/event-stream",
    "content-type": "application/json"
  }
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: {
      name: "invoke_operation",
      arguments: { connector_id: connector.json.id, connection_id: connection.json.id, operation_id: "ping" }
    }
  })
  return async (n, i) => {
    const response = await fetch(`${n[i() % n.length]!.base}/mcp/`, {
      method: "POST",
      headers,
      body,
      dispatcher
    } as RequestInit)
    const answer = await response.json().catch(() => null) as any
    return response.status === 200 && answer?.result?.isError !== true && answer?.result !== undefined
  }
}

interface Measured {
  readonly mode: Mode
  readonly nodes: number
  readonly perSecond: number
  readonly failed: number
  /** Each node's CPU use over the window, in CPUs (the cap is settings.quota). */
  readonly nodeCpu: ReadonlyArray<number>
  /** CPU ms per unit of work, all nodes together. */
  readonly cpuMsPerUnit: number
  readonly statementsPerUnit: number
  /** PostgreSQL's CPU ms per unit of work (it serves only this measurement's nodes). */
  readonly postgresCpuMsPerUnit: number
  readonly commitsPerUnit: number
  readonly topStatements: ReadonlyArray<{ readonly perUnit: number; readonly query: string }>
  /** Over the window, in CPUs: the whole machine busy, PostgreSQL, and this process (the load generator). */
  readonly machine: { readonly busy: number; readonly postgres: number; readonly loadGenerator: number }
  /** budget: what the agent spent, against its cap. */
  readonly spentUsd?: number
}

const measure = async (mode: Mode, count: number, admin: pg.Pool, pgUrl: string, upstreamUrl: string) => {
  const database = `scaling_${mode}_${count}_${Date.now()}`
  await admin.query(`CREATE DATABASE ${database}`)
  const url = new URL(pgUrl)
  url.pathname = `/${database}`
  const databaseUrl = url.toString()
  const publicUrl = `http://127.0.0.1:${await freePort()}`
  const { apiKey, nodes } = await startNodes(count, databaseUrl, publicUrl)
  try {
    await sleep(settings.settleMs)
    // SCALING_QUOTA=0: no caps (to profile without throttling's skew; efficiencies then mean nothing)
    if (settings.quota > 0) nodes.forEach((n, i) => cap(n.child.pid!, i))
    const work = await prepare(mode, nodes, apiKey, databaseUrl, publicUrl, upstreamUrl)
    const db = databaseWork(admin, database)
    let done = 0
    let failed = 0
    let next = 0
    const t0 = performance.now() + settings.warmupMs
    const t1 = t0 + settings.durationMs
    let cpu0: Array<number> = []
    let pgCpu0 = 0
    let machine0 = machineTicks()
    let self0 = process.cpuUsage()
    let fromUs = 0n
    const windowOpens = sleep(settings.warmupMs).then(async () => {
      fromUs = process.hrtime.bigint() / 1000n
      cpu0 = nodes.map((n) => cpuSeconds(n.child.pid!))
      pgCpu0 = postgresCpuMs()
      machine0 = machineTicks()
      self0 = process.cpuUsage()
      await db.reset()
    })
    await Promise.all(Array.from({ length: producersFor(count) }, async () => {
      while (performance.now() < t1) {
        const ok = await work(nodes, () => next++).catch(() => false)
        const now = performance.now()
        if (!ok) failed++
        else if (now >= t0 && now <= t1) done++
      }
    }))
    await windowOpens
    // SCALING_PRODUCERS=0: what the nodes cost idle
    if (producersFor(count) === 0) await sleep(settings.durationMs)
    if (cpuProfDir !== undefined) {
      console.log(
        `  profile window: --from ${fromUs} --to ${process.hrtime.bigint() / 1000n} (${mode}, ${count} nodes)`
      )
    }
    const seconds = settings.durationMs / 1000
    const nodeCpu = nodes.map((n, i) => (cpuSeconds(n.child.pid!) - cpu0[i]!) / seconds)
    const pgCpu = postgresCpuMs() - pgCpu0
    const machine1 = machineTicks()
    const self = process.cpuUsage(self0)
    const cpus = Os.cpus().length
    const machineUse = {
      busy: ((machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total)) * cpus,
      postgres: pgCpu / 1000 / seconds,
      loadGenerator: (self.user + self.system) / 1e6 / seconds
    }
    const work_ = await db.read()
    const units = Math.max(1, done)
    let spentUsd: number | undefined
    if (mode === "budget") {
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      spentUsd = Number((await client.query("SELECT coalesce(sum(cost_usd), 0) AS s FROM llm_usage")).rows[0].s)
      await client.end()
    }
    return {
      mode,
      nodes: count,
      perSecond: done / seconds,
      failed,
      nodeCpu,
      cpuMsPerUnit: (nodeCpu.reduce((a, b) => a + b, 0) * seconds * 1000) / units,
      statementsPerUnit: work_.statements / units,
      postgresCpuMsPerUnit: pgCpu / units,
      commitsPerUnit: work_.commits / units,
      topStatements: work_.top.map((t) => ({ perUnit: t.calls / units, query: t.query })),
      machine: machineUse,
      ...(spentUsd === undefined ? {} : { spentUsd })
    } satisfies Measured
  } finally {
    await stopNodes(nodes)
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined)
  }
}

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)]!
}

const commitOf = (dir: string) => {
  try {
    const git = (args: Array<string>) =>
      execFileSync("git", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim()
    return git(["rev-parse", "--short", "HEAD"]) + (git(["status", "--porcelain", "--", "src", "cluster"])
      ? "+changes"
      : "")
  } catch {
    return Fs.existsSync(Path.join(dir, "COMMIT")) ? Fs.readFileSync(Path.join(dir, "COMMIT"), "utf8").trim() : "?"
  }
}

export const run = async (): Promise<{ readonly ok: boolean }> => {
  if (cgroupVersion === undefined || process.getuid?.() !== 0) {
    throw new Error("bench scaling caps each node's CPU with a cgroup: run it as root on Linux (cgroup v1 or v2)")
  }
  const loadBefore = warnIfBusy()
  const postgres = await startPostgres()
  const admin = new pg.Pool({ connectionString: postgres.url, max: 4 })
  const upstream = await startUpstream()
  const results: Array<Measured & { readonly run: number; readonly efficiency: number }> = []
  try {
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    console.log(
      `cgroup v${cgroupVersion}, ${settings.quota} CPU per node, ${
        settings.producersPerNode > 0
          ? `${settings.producersPerNode} producers per node`
          : `${settings.producers} producers`
      }, ` +
        `${settings.durationMs / 1000} s windows, ${settings.runs} run(s); nodes from ${root} (${commitOf(root)})`
    )
    for (let r = 1; r <= settings.runs; r++) {
      for (const mode of settings.modes) {
        let one: number | undefined
        for (const count of settings.nodeCounts) {
          const m = await measure(mode, count, admin, postgres.url, upstream.url)
          one ??= m.perSecond / count
          const efficiency = m.perSecond / (count * one)
          results.push({ ...m, run: r, efficiency })
          console.log(
            `run ${r} ${mode.padEnd(9)} nodes=${count} ${fmt(m.perSecond, 0).padStart(5)}/s eff ${fmt(efficiency, 2)}` +
              ` cpu ${m.nodeCpu.map((c) => fmt(c, 2)).join(",")} | per unit: ${fmt(m.cpuMsPerUnit, 2)} CPU ms, ` +
              `${fmt(m.statementsPerUnit, 2)} statements, ${fmt(m.commitsPerUnit, 2)} commits, ` +
              `${fmt(m.postgresCpuMsPerUnit, 2)} PostgreSQL CPU ms` +
              (m.failed > 0 ? ` (${m.failed} failed)` : "") +
              (m.spentUsd === undefined ? "" : `; spent $${fmt(m.spentUsd, 4)} of $${settings.budget.limit_usd}`) +
              `\n      machine ${fmt(m.machine.busy, 2)} of ${Os.cpus().length} CPUs busy: PostgreSQL ` +
              `${fmt(m.machine.postgres, 2)}, load generator ${fmt(m.machine.loadGenerator, 2)}`
          )
          if (process.env["SCALING_STATEMENTS"] === "true") {
            for (const t of m.topStatements) console.log(`      ${fmt(t.perUnit, 2).padStart(6)}  ${t.query}`)
          }
        }
      }
    }
  } finally {
    upstream.close()
    await admin.end()
    await postgres.close()
    removeGroups()
  }

  // the spread over runs: each row's median, min and max
  const rows = settings.modes.flatMap((mode) =>
    settings.nodeCounts.map((count) => {
      const of = results.filter((x) => x.mode === mode && x.nodes === count)
      const eff = of.map((x) => x.efficiency)
      const rate = of.map((x) => x.perSecond)
      return {
        mode,
        nodes: count,
        perSecond: { median: median(rate), min: Math.min(...rate), max: Math.max(...rate) },
        efficiency: { median: median(eff), min: Math.min(...eff), max: Math.max(...eff) },
        cpuMsPerUnit: median(of.map((x) => x.cpuMsPerUnit)),
        statementsPerUnit: median(of.map((x) => x.statementsPerUnit)),
        postgresCpuMsPerUnit: median(of.map((x) => x.postgresCpuMsPerUnit)),
        commitsPerUnit: median(of.map((x) => x.commitsPerUnit)),
        machineBusy: median(of.map((x) => x.machine.busy)),
        failed: of.reduce((a, x) => a + x.failed, 0),
        ...(mode === "budget" ? { overspent: of.some((x) => (x.spentUsd ?? 0) > settings.budget.limit_usd) } : {})
      }
    })
  )
  console.log(`\nScaling efficiency T_N / (N × T_1), median [min–max] over ${settings.runs} run(s):`)
  for (const mode of settings.modes) {
    const of = rows.filter((x) => x.mode === mode)
    console.log(
      `  ${mode.padEnd(9)} ` +
        of.map((x) =>
          `${x.nodes}: ${fmt(x.efficiency.median, 2)} [${fmt(x.efficiency.min, 2)}–${fmt(x.efficiency.max, 2)}] ` +
          `(${fmt(x.perSecond.median, 0)}/s)`
        ).join("  ")
    )
  }
  const file = Path.join(repoRoot, "bench/results/scaling.json")
  const previous = Fs.existsSync(file) ? JSON.parse(Fs.readFileSync(file, "utf8")) : { benchmark: name, runs: [] }
  previous.runs.push({
    date: new Date().toISOString(),
    machine,
    commit: commitOf(root),
    cgroup: `v${cgroupVersion}`,
    loadAverageBefore: loadBefore,
    settings,
    rows,
    measurements: results
  })
  Fs.writeFileSync(file, JSON.stringify(previous, null, 2) + "\n")
  console.log(`\nResults appended to ${Path.relative(process.cwd(), file)}`)
  const ok = rows.every((x) => x.failed === 0 && x.overspent !== true)
  return { ok }
}
