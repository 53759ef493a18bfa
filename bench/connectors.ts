import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Latency, measureLatency, measureThroughput, type Target, type Throughput } from "./support/load.js"
import { type Bare, cpuProfiling, cpuTimeMs, startNode, startScript, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, reportErrors, table, warnIfBusy, writeResults as write } from "./support/report.js"

/**
 * Cost of a connector call through Switchyard, measured in one run on 127.0.0.1 against a small upstream
 * API (`GET /items/{id}`, ~1 KB of JSON, in its own process):
 *   - direct: the upstream itself (the baseline);
 *   - switchyard: `POST /v1/tools/connectors/{id}/connections/{id}/getItem`, which validates the input,
 *     applies the connection's API key and streams the upstream's answer back;
 *   - control: a minimal undici proxy in its own process (bench/support/undiciProxy.ts), the price of
 *     any proxy at all.
 * Sequential latency (concurrency 1) and throughput at concurrency 50 for each. The node runs at log
 * level warning (the targets are judged there) and, first, at info (the production default).
 *
 * BENCH_CPU_PROF=<dir> starts the nodes with `--cpu-prof --cpu-prof-dir=<dir>` (one .cpuprofile per node,
 * written at its exit; start-up is in it too). See bench/support/cpuProfile.ts to read one.
 */
export const name = "connectors"

const settings = {
  concurrency: 50,
  warmupMs: 1000,
  durationMs: 5000,
  latencyWarmup: 200,
  latencyRequests: 2000
} as const

/** Informational targets: printed as PASS/MISS, never a failure of the run. */
const targets = {
  /** Switchyard p50 / direct p50, at most. */
  latencyVsDirect: 3,
  /** Switchyard throughput / control-proxy throughput, at least. */
  throughputVsControl: 0.5
} as const

/** What the connection stores and the upstream requires. */
const upstreamKey = "k"

/**
 * CPU time per request over the throughput window (Linux): of the server under test (its process tree:
 * the node with its embedded PostgreSQL, or the proxy, or for `direct` the upstream itself) and of the
 * upstream behind it. Less skewed than req/s by other work on the machine, which takes cores, not CPU
 * time per request.
 */
interface CpuPerRequest {
  readonly serverMs: number
  /** Of serverMs, the part of the server's child processes (the node's PostgreSQL). */
  readonly childrenMs: number | null
  readonly upstreamMs: number | null
}

interface Row {
  readonly label: string
  readonly kind: "direct" | "control" | "switchyard"
  readonly logLevel: "info" | "warning" | null
  readonly method: string
  readonly path: string
  readonly throughput: Throughput
  readonly latency: Latency
  readonly cpu: CpuPerRequest | null
}

/** Which processes a row's CPU time is read from. */
interface Pids {
  readonly server: ReadonlyArray<number>
  readonly upstream?: ReadonlyArray<number>
}

/** Snapshots CPU times at the start and end of measureThroughput's window (timers set as it starts). */
const cpuDuringWindow = (pids: Pids) => {
  const read = () => ({
    server: cpuTimeMs(pids.server),
    own: cpuTimeMs(pids.server, { descendants: false }),
    upstream: pids.upstream && cpuTimeMs(pids.upstream)
  })
  let start: ReturnType<typeof read> | undefined
  let end: ReturnType<typeof read> | undefined
  const timers = [
    setTimeout(() => (start = read()), settings.warmupMs),
    setTimeout(() => (end = read()), settings.warmupMs + settings.durationMs)
  ]
  return (requests: number): CpuPerRequest | null => {
    for (const t of timers) clearTimeout(t)
    if (start?.server === undefined || end?.server === undefined || requests === 0) return null
    const perRequest = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined ? null : (b - a) / requests
    const serverMs = perRequest(start.server, end.server)!
    const ownMs = perRequest(start.own, end.own)
    return {
      serverMs,
      childrenMs: ownMs === null ? null : serverMs - ownMs,
      upstreamMs: perRequest(start.upstream, end.upstream)
    }
  }
}

/** The monotonic clock in µs, as V8 stamps .cpuprofile samples (see support/cpuProfile.ts). */
const monotonicUs = () => process.hrtime.bigint() / 1000n

/** With BENCH_CPU_PROF: each measurement's window, to cut start-up and shutdown out of the profiles. */
const windows: Array<{ readonly label: string; readonly fromUs: string; readonly toUs: string }> = []

const measure = async (kind: Row["kind"], logLevel: Row["logLevel"], target: Target, pids: Pids): Promise<Row> => {
  process.stdout.write(`  ${target.name} ...`)
  const fromUs = monotonicUs()
  const cpuWindow = cpuDuringWindow(pids)
  const throughput = await measureThroughput(target, settings)
  const cpu = cpuWindow(throughput.requests)
  const latency = await measureLatency(target, { warmup: settings.latencyWarmup, requests: settings.latencyRequests })
  windows.push({ label: target.name, fromUs: String(fromUs), toUs: String(monotonicUs()) })
  process.stdout.write(` ${Math.round(throughput.rps)} req/s, p50 ${latency.p50Ms.toFixed(3)} ms\n`)
  return {
    label: target.name,
    kind,
    logLevel,
    method: target.method ?? "GET",
    path: new URL(target.url).pathname,
    throughput,
    latency,
    cpu
  }
}

/** The upstream's OpenAPI document: one operation, API key in a header. */
const spec = (upstreamUrl: string) => ({
  openapi: "3.0.3",
  info: { title: "Bench items", version: "1.0" },
  servers: [{ url: upstreamUrl }],
  security: [{ apiKey: [] }],
  components: { securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "X-Api-Key" } } },
  paths: {
    "/items/{id}": {
      get: {
        operationId: "getItem",
        summary: "Get an item",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "the item" } }
      }
    }
  }
})

const post = async (url: string, apiKey: string, body: unknown): Promise<{ readonly id: string }> => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  if (response.status !== 201) throw new Error(`POST ${new URL(url).pathname}: ${response.status} ${text}`)
  return JSON.parse(text) as { readonly id: string }
}

/** Imports the upstream as a connector with one connection; returns the invoke URL of `getItem`. */
const setUpConnector = async (baseUrl: string, apiKey: string, upstreamUrl: string): Promise<string> => {
  const connector = await post(`${baseUrl}/v1/tools/connectors`, apiKey, { spec: spec(upstreamUrl) })
  const connection = await post(`${baseUrl}/v1/tools/connectors/${connector.id}/connections`, apiKey, {
    name: "bench",
    credentials: { type: "api_key", value: upstreamKey }
  })
  return `${baseUrl}/v1/tools/connectors/${connector.id}/connections/${connection.id}/getItem`
}

const invokeTarget = (invokeUrl: string, apiKey: string, logLevel: "info" | "warning"): Target => ({
  name: `switchyard [${logLevel}] invoke getItem`,
  url: invokeUrl,
  method: "POST",
  headers: { "x-api-key": apiKey, "content-type": "application/json" },
  body: JSON.stringify({ path_params: { id: "42" } })
})

/** One request before measuring: each target must answer 200 with exactly the upstream's body. */
const checkTarget = async (target: Target, expected: string): Promise<void> => {
  const response = await fetch(target.url, {
    method: target.method ?? "GET",
    headers: target.headers ?? {},
    ...(target.body === undefined ? {} : { body: target.body })
  })
  const body = await response.text()
  if (response.status !== 200 || body !== expected) {
    throw new Error(
      `${target.name}: expected 200 with the upstream's body, got ${response.status}: ${body.slice(0, 300)}`
    )
  }
}

const writeResults = (json: Record<string, unknown>) => write(name, settings, json)

const verdict = (ok: boolean) => (ok ? "PASS" : "MISS")

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const tmp = tempDir("switchyard-bench-")
  const dataDir = Path.join(tmp, "data")
  Fs.mkdirSync(dataDir)
  const loadBefore = warnIfBusy()
  const { dir: profileDir, nodeArgs } = cpuProfiling()
  const nodeEnv = { SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" }
  const rows: Array<Row> = []
  let upstream: Bare | undefined
  let control: Bare | undefined
  try {
    upstream = await startScript("upstreamServer.ts")
    control = await startScript("undiciProxy.ts", { UPSTREAM_URL: upstream.baseUrl })
    const upstreamHeaders = { "x-api-key": upstreamKey }
    const direct: Target = {
      name: "direct upstream GET /items/42",
      url: `${upstream.baseUrl}/items/42`,
      headers: upstreamHeaders
    }
    const expected = await (await fetch(direct.url, { headers: upstreamHeaders })).text()
    await checkTarget(direct, expected)
    const proxied: Target = {
      name: "control undici proxy GET /items/42",
      url: `${control.baseUrl}/items/42`,
      headers: upstreamHeaders
    }
    await checkTarget(proxied, expected)

    console.log(`Upstream (node:http, ${Buffer.byteLength(expected)} B JSON) and control proxy (undici)`)
    rows.push(await measure("direct", null, direct, { server: [upstream.pid] }))
    rows.push(await measure("control", null, proxied, { server: [control.pid], upstream: [upstream.pid] }))

    // first start on an empty data dir prints the key; connector and connection outlive the restart
    console.log(`Switchyard node, first start (fresh data dir, log level info, SWITCHYARD_EGRESS_ALLOW=127.0.0.1)`)
    const first = await startNode({
      dataDir,
      logLevel: "info",
      logFile: Path.join(tmp, "node-info.log"),
      expectApiKey: true,
      env: nodeEnv,
      nodeArgs
    })
    const apiKey = first.apiKey!
    const invokeUrl = await setUpConnector(first.baseUrl, apiKey, upstream.baseUrl)
    const viaInfo = invokeTarget(invokeUrl, apiKey, "info")
    await checkTarget(viaInfo, expected)
    rows.push(await measure("switchyard", "info", viaInfo, { server: [first.pid], upstream: [upstream.pid] }))
    await first.stop()

    console.log(`Switchyard node, second start (same data dir, log level warning, SWITCHYARD_EGRESS_ALLOW=127.0.0.1)`)
    const second = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node-warning.log"),
      expectApiKey: false,
      env: nodeEnv,
      nodeArgs
    })
    const secondUrl = invokeUrl.replace(first.baseUrl, second.baseUrl)
    const viaWarning = invokeTarget(secondUrl, apiKey, "warning")
    await checkTarget(viaWarning, expected)
    rows.push(await measure("switchyard", "warning", viaWarning, { server: [second.pid], upstream: [upstream.pid] }))
    await second.stop()
  } catch (e) {
    writeResults({ ok: false, error: e instanceof Error ? e.message : String(e), loadAverageBefore: loadBefore, rows })
    throw e
  } finally {
    await control?.stop()
    await upstream?.stop()
    await stopAll()
  }
  const loadAfter = Os.loadavg()[0]!

  const [direct, control_, info, warning] = rows as [Row, Row, Row, Row]
  console.log(`\n${table(rows, settings.concurrency)}\n`)
  const compare = (r: Row) => ({
    label: r.label,
    p50VsDirect: ratio(r.latency.p50Ms, direct.latency.p50Ms),
    p99VsDirect: ratio(r.latency.p99Ms, direct.latency.p99Ms),
    p50VsControl: ratio(r.latency.p50Ms, control_.latency.p50Ms),
    throughputVsDirect: ratio(r.throughput.rps, direct.throughput.rps),
    throughputVsControl: ratio(r.throughput.rps, control_.throughput.rps),
    addedP50Ms: r.latency.p50Ms - direct.latency.p50Ms
  })
  const ratios = [control_, info, warning].map(compare)
  console.log(`Against this run's direct baseline and control proxy:`)
  for (const x of ratios) {
    console.log(
      `  ${x.label}: p50 = ${fmt(x.p50VsDirect, 2)}x direct (+${fmt(x.addedP50Ms, 3)} ms), ${
        fmt(x.p50VsControl, 2)
      }x control; p99 = ${fmt(x.p99VsDirect, 2)}x direct; throughput = ${fmt(x.throughputVsDirect, 2)}x direct, ${
        fmt(x.throughputVsControl, 2)
      }x control`
    )
  }
  const cpuOf = (r: Row) => (r.cpu === null ? "n/a" : `${fmt(r.cpu.serverMs, 3)} ms`)
  console.log(`\nServer CPU time per request over the throughput window (c=${settings.concurrency}; user + system):`)
  for (const r of rows) {
    const what = r.kind === "switchyard"
      ? `node + its PostgreSQL${
        r.cpu?.childrenMs == null ? "" : `, of which PostgreSQL ${fmt(r.cpu.childrenMs, 3)} ms`
      }`
      : r.kind === "control"
      ? "proxy process"
      : "upstream process"
    const upstreamPart = r.cpu?.upstreamMs == null ? "" : `, upstream behind it ${fmt(r.cpu.upstreamMs, 3)} ms`
    console.log(`  ${r.label}: ${cpuOf(r)} (${what})${upstreamPart}`)
  }
  const cpuVsControl = warning.cpu !== null && control_.cpu !== null
    ? ratio(warning.cpu.serverMs, control_.cpu.serverMs)
    : Number.NaN
  console.log(
    `  Switchyard [warning] spends ${fmt(cpuVsControl, 1)}x the control proxy's CPU per request ` +
      `(the throughput target needs <= ${fmt(1 / targets.throughputVsControl, 1)}x when CPU-bound).`
  )

  const judged = ratios[2]!
  const latencyOk = judged.p50VsDirect <= targets.latencyVsDirect
  const throughputOk = judged.throughputVsControl >= targets.throughputVsControl
  console.log(`\nTargets (log level warning; informational, a miss does not fail the run):`)
  console.log(
    `  ${verdict(latencyOk)}  Switchyard p50 / direct p50 = ${fmt(judged.p50VsDirect, 2)}x ` +
      `(target <= ${targets.latencyVsDirect}x)`
  )
  console.log(
    `  ${verdict(throughputOk)}  Switchyard throughput / control-proxy throughput = ${
      fmt(judged.throughputVsControl, 2)
    }x (target >= ${targets.throughputVsControl}x)`
  )
  console.log(
    `  (control vs direct: p50 = ${fmt(ratios[0]!.p50VsDirect, 2)}x, throughput = ${
      fmt(ratios[0]!.throughputVsDirect, 2)
    }x)`
  )
  if (ratios[0]!.p50VsDirect > targets.latencyVsDirect) {
    console.log(
      `  (the control proxy itself is above ${targets.latencyVsDirect}x direct p50 on this machine: ` +
        `the latency target is tighter than any proxy in Node reaches here)`
    )
  }
  console.log(
    `\nNote: ${Os.cpus().length} CPU core(s) shared by the load generator, the upstream, the proxy under test ` +
      `and (for Switchyard) its embedded PostgreSQL; load average ${fmt(loadBefore, 2)} before, ` +
      `${fmt(loadAfter, 2)} after (it includes this run's own load).`
  )

  if (nodeArgs.length > 0) {
    console.log(`\nCPU profiles of the nodes are in ${profileDir} (one per start). Measurement windows:`)
    for (const w of windows.filter((w) => w.label.startsWith("switchyard"))) {
      console.log(`  ${w.label}: node --import tsx bench/support/cpuProfile.ts FILE --from ${w.fromUs} --to ${w.toUs}`)
    }
  }

  const failed = reportErrors(rows)
  if (failed.length > 0) {
    console.log(`\n!!! ${failed.length} target(s) saw request errors: this run's connector numbers are NOT valid.`)
  }
  writeResults({
    ok: failed.length === 0,
    loadAverageBefore: loadBefore,
    loadAverageAfter: loadAfter,
    rows,
    ratios,
    cpuPerRequestVsControl: cpuVsControl,
    ...(nodeArgs.length > 0 ? { profileWindows: windows } : {}),
    targets: {
      latencyVsDirect: { max: targets.latencyVsDirect, value: judged.p50VsDirect, pass: latencyOk },
      throughputVsControl: { min: targets.throughputVsControl, value: judged.throughputVsControl, pass: throughputOk }
    }
  })
  return { ok: failed.length === 0 }
}
