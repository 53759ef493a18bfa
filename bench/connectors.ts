import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Latency, measureLatency, measureThroughput, type Target, type Throughput } from "./support/load.js"
import { type Bare, cpuProfiling, cpuTimeMs, startNode, startScript, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, reportErrors, table, warnIfBusy } from "./support/report.js"
import { appendRun, fmtSpread, rounds, spread } from "./support/runs.js"

/**
 * Cost of a connector call through Switchyard, measured in one run on 127.0.0.1 against a small upstream
 * API (`GET /items/{id}`, ~1 KB of JSON, in its own process):
 *   - direct: the upstream itself (the baseline);
 *   - switchyard: `POST /v1/tools/connectors/{id}/connections/{id}/getItem`, which validates the input,
 *     applies the connection's API key and streams the upstream's answer back;
 *   - control: a minimal undici proxy in its own process (bench/support/undiciProxy.ts), the price of
 *     any proxy at all.
 * Sequential latency (concurrency 1) and throughput at concurrency 50 for each, in BENCH_RUNS rounds (3 by
 * default): each round measures all four (the node at log level info, the production default, then at
 * warning), so every ratio compares figures of one round. Each invocation appends its rounds and their
 * spread to bench/results/connectors.json (support/runs.ts).
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

/**
 * Informational targets (issue 21), at both log levels: printed as PASS/MISS on the medians over the rounds,
 * never a failure of the run.
 */
const targets = {
  /** Switchyard p50 / direct p50, at most. */
  latencyVsDirect: 2,
  /** Switchyard throughput / control-proxy throughput, at least. */
  throughputVsControl: 0.7
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

const verdict = (ok: boolean) => (ok ? "PASS" : "MISS")

/** One round's ratios, against its own direct baseline and control proxy. */
const compare = (r: Row, direct: Row, control: Row) => ({
  label: r.label,
  p50VsDirect: ratio(r.latency.p50Ms, direct.latency.p50Ms),
  p99VsDirect: ratio(r.latency.p99Ms, direct.latency.p99Ms),
  p50VsControl: ratio(r.latency.p50Ms, control.latency.p50Ms),
  throughputVsDirect: ratio(r.throughput.rps, direct.throughput.rps),
  throughputVsControl: ratio(r.throughput.rps, control.throughput.rps),
  cpuVsControl: r.cpu !== null && control.cpu !== null ? ratio(r.cpu.serverMs, control.cpu.serverMs) : Number.NaN,
  addedP50Ms: r.latency.p50Ms - direct.latency.p50Ms
})
type Ratios = ReturnType<typeof compare>

interface Round {
  readonly round: number
  readonly rows: ReadonlyArray<Row>
  readonly ratios: ReadonlyArray<Ratios>
}

const printRound = (rows: ReadonlyArray<Row>, ratios: ReadonlyArray<Ratios>) => {
  console.log(`\n${table(rows, settings.concurrency)}\n`)
  for (const x of ratios) {
    console.log(
      `  ${x.label}: p50 = ${fmt(x.p50VsDirect, 2)}x direct (+${fmt(x.addedP50Ms, 3)} ms), ${
        fmt(x.p50VsControl, 2)
      }x control; throughput = ${fmt(x.throughputVsControl, 2)}x control; CPU/request = ${
        fmt(x.cpuVsControl, 2)
      }x control`
    )
  }
  const cpuOf = (r: Row) => (r.cpu === null ? "n/a" : `${fmt(r.cpu.serverMs, 3)} ms`)
  for (const r of rows) {
    const what = r.kind === "switchyard"
      ? `node + its PostgreSQL${
        r.cpu?.childrenMs == null ? "" : `, of which PostgreSQL ${fmt(r.cpu.childrenMs, 3)} ms`
      }`
      : r.kind === "control"
      ? "proxy process"
      : "upstream process"
    console.log(`  CPU per request, ${r.label}: ${cpuOf(r)} (${what})`)
  }
}

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const tmp = tempDir("switchyard-bench-")
  const dataDir = Path.join(tmp, "data")
  Fs.mkdirSync(dataDir)
  const loadBefore = warnIfBusy()
  const { dir: profileDir, nodeArgs } = cpuProfiling()
  const nodeEnv = { SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" }
  const count = rounds()
  const done: Array<Round> = []
  const record = (entry: Record<string, unknown>) =>
    appendRun(name, { ...settings, rounds: count, nodeEnv, targets }, entry)
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
    console.log(
      `Upstream (node:http, ${Buffer.byteLength(expected)} B JSON) and control proxy (undici); ${count} rounds`
    )

    let apiKey: string | undefined
    let invokePath: string | undefined
    /** A node at `logLevel` on the one data dir; the first start creates the key, the connector and connection. */
    const measureNode = async (logLevel: "info" | "warning") => {
      console.log(`Switchyard node at log level ${logLevel} (SWITCHYARD_EGRESS_ALLOW=127.0.0.1)`)
      const node = await startNode({
        dataDir,
        logLevel,
        logFile: Path.join(tmp, `node-${logLevel}.log`),
        expectApiKey: apiKey === undefined,
        env: nodeEnv,
        nodeArgs
      })
      try {
        apiKey ??= node.apiKey!
        invokePath ??= new URL(await setUpConnector(node.baseUrl, apiKey, upstream!.baseUrl)).pathname
        const target = invokeTarget(node.baseUrl + invokePath, apiKey, logLevel)
        await checkTarget(target, expected)
        return await measure("switchyard", logLevel, target, { server: [node.pid], upstream: [upstream!.pid] })
      } finally {
        await node.stop()
      }
    }

    for (let round = 1; round <= count; round++) {
      console.log(`\nRound ${round} of ${count}`)
      const rows: Array<Row> = []
      rows.push(await measure("direct", null, direct, { server: [upstream.pid] }))
      rows.push(await measure("control", null, proxied, { server: [control.pid], upstream: [upstream.pid] }))
      rows.push(await measureNode("info"))
      rows.push(await measureNode("warning"))
      const [d, c] = rows as [Row, Row]
      const ratios = rows.slice(1).map((r) => compare(r, d, c))
      printRound(rows, ratios)
      done.push({ round, rows, ratios })
    }
  } catch (e) {
    record({
      ok: false,
      error: e instanceof Error ? e.message : String(e),
      loadAverageBefore: loadBefore,
      rounds: done
    })
    throw e
  } finally {
    await control?.stop()
    await upstream?.stop()
    await stopAll()
  }
  const loadAfter = Os.loadavg()[0]!

  // the spread over rounds of every ratio; the targets are judged on the medians, at both log levels
  const summaryOf = (label: string) => {
    const of = done.map((r) => r.ratios.find((x) => x.label === label)!)
    const cpuMs = done.map((r) => r.rows.find((x) => x.label === label)?.cpu?.serverMs ?? Number.NaN)
    return {
      label,
      p50VsDirect: spread(of.map((x) => x.p50VsDirect)),
      p50VsControl: spread(of.map((x) => x.p50VsControl)),
      throughputVsControl: spread(of.map((x) => x.throughputVsControl)),
      cpuVsControl: spread(of.map((x) => x.cpuVsControl)),
      cpuMsPerRequest: spread(cpuMs)
    }
  }
  const labels = done[0]!.ratios.map((x) => x.label)
  const summary = labels.map(summaryOf)
  const direct = spread(done.map((r) => r.rows[0]!.cpu?.serverMs ?? Number.NaN))
  console.log(`\nMedian [min–max] over ${count} rounds, each against its own direct baseline and control proxy:`)
  for (const x of summary) {
    console.log(
      `  ${x.label}: p50 ${fmtSpread(x.p50VsDirect, 2)}x direct, ${fmtSpread(x.p50VsControl, 2)}x control; ` +
        `throughput ${fmtSpread(x.throughputVsControl, 2)}x control; CPU/request ${
          fmtSpread(x.cpuMsPerRequest, 3)
        } ms (${fmtSpread(x.cpuVsControl, 2)}x control)`
    )
  }
  console.log(`  (direct upstream CPU/request ${fmtSpread(direct, 3)} ms)`)

  const judged = summary.filter((x) => x.label.startsWith("switchyard")).map((x) => ({
    label: x.label,
    latencyVsDirect: {
      max: targets.latencyVsDirect,
      value: x.p50VsDirect.median,
      pass: x.p50VsDirect.median <= targets.latencyVsDirect
    },
    throughputVsControl: {
      min: targets.throughputVsControl,
      value: x.throughputVsControl.median,
      pass: x.throughputVsControl.median >= targets.throughputVsControl
    }
  }))
  console.log(`\nTargets (medians; informational, a miss does not fail the run):`)
  for (const j of judged) {
    console.log(
      `  ${verdict(j.latencyVsDirect.pass)}  ${j.label}: p50 / direct p50 = ${fmt(j.latencyVsDirect.value, 2)}x ` +
        `(target <= ${targets.latencyVsDirect}x)`
    )
    console.log(
      `  ${verdict(j.throughputVsControl.pass)}  ${j.label}: throughput / control = ${
        fmt(j.throughputVsControl.value, 2)
      }x (target >= ${targets.throughputVsControl}x)`
    )
  }
  const controlP50 = summary.find((x) => x.label.startsWith("control"))!.p50VsDirect
  if (controlP50.median > targets.latencyVsDirect) {
    console.log(
      `  (the control proxy itself answers at ${fmtSpread(controlP50, 2)}x direct p50 here: the latency target is ` +
        `tighter than a proxy in Node reaches on this machine)`
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

  const failed = reportErrors(done.flatMap((r) => r.rows))
  if (failed.length > 0) {
    console.log(`\n!!! ${failed.length} target(s) saw request errors: this run's connector numbers are NOT valid.`)
  }
  record({
    ok: failed.length === 0,
    loadAverageBefore: loadBefore,
    loadAverageAfter: loadAfter,
    summary,
    targets: judged,
    rounds: done,
    ...(nodeArgs.length > 0 ? { profileWindows: windows } : {})
  })
  return { ok: failed.length === 0 }
}
