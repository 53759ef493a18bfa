import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Latency, measureLatency, measureThroughput, type Target, type Throughput } from "./support/load.js"
import { startBare, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, reportErrors, table, warnIfBusy, writeResults as write } from "./support/report.js"

/**
 * HTTP overhead of a Switchyard node against a bare node:http server, measured in one run on 127.0.0.1:
 * throughput at concurrency 50 and sequential latency, for /healthz (framework + request pipeline) and
 * an authenticated /v1/me (plus API-key check and a database read), at log level info (production
 * default) and warning (no per-request log line). Also start-up and graceful shutdown times.
 */
export const name = "http"

const settings = {
  concurrency: 50,
  warmupMs: 1000,
  durationMs: 5000,
  latencyWarmup: 200,
  latencyRequests: 2000
} as const

interface Row {
  readonly label: string
  readonly server: "bare" | "switchyard"
  readonly logLevel: "info" | "warning" | null
  readonly path: string
  readonly throughput: Throughput
  readonly latency: Latency
}

const measure = async (server: Row["server"], logLevel: Row["logLevel"], target: Target): Promise<Row> => {
  process.stdout.write(`  ${target.name} ...`)
  const throughput = await measureThroughput(target, settings)
  const latency = await measureLatency(target, { warmup: settings.latencyWarmup, requests: settings.latencyRequests })
  process.stdout.write(` ${Math.round(throughput.rps)} req/s, p50 ${latency.p50Ms.toFixed(3)} ms\n`)
  return { label: target.name, server, logLevel, path: new URL(target.url).pathname, throughput, latency }
}

/** Both routes of a running node; /v1/me carries the key captured at the first start. */
const measureNode = async (baseUrl: string, logLevel: "info" | "warning", apiKey: string): Promise<Array<Row>> => [
  await measure("switchyard", logLevel, { name: `switchyard [${logLevel}] GET /healthz`, url: `${baseUrl}/healthz` }),
  await measure("switchyard", logLevel, {
    name: `switchyard [${logLevel}] GET /v1/me`,
    url: `${baseUrl}/v1/me`,
    headers: { "x-api-key": apiKey }
  })
]

const writeResults = (json: Record<string, unknown>) => write(name, settings, json)

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const tmp = tempDir("switchyard-bench-")
  const dataDir = Path.join(tmp, "data")
  Fs.mkdirSync(dataDir)
  // other work on the machine skews every number: say so up front and in the results
  const loadBefore = warnIfBusy()
  const rows: Array<Row> = []
  const startup: Record<string, number> = {}
  try {
    console.log(`Bare node:http baseline`)
    const bare = await startBare()
    rows.push(await measure("bare", null, { name: "bare node:http GET /healthz", url: `${bare.baseUrl}/healthz` }))
    await bare.stop()

    // first start on an empty data dir: initdb, migrations, first-start bootstrap that prints the key
    console.log(`Switchyard node, first start (fresh data dir, log level info)`)
    const first = await startNode({
      dataDir,
      logLevel: "info",
      logFile: Path.join(tmp, "node-info.log"),
      expectApiKey: true
    })
    startup["firstStartMs"] = first.startupMs
    console.log(`  ready after ${fmt(first.startupMs / 1000, 2)} s`)
    rows.push(...(await measureNode(first.baseUrl, "info", first.apiKey!)))
    startup["firstShutdownMs"] = await first.stop()

    // second start on the same data dir: PostgreSQL and schema exist, so this is the usual restart cost
    console.log(`Switchyard node, second start (same data dir, log level warning)`)
    const second = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node-warning.log"),
      expectApiKey: false
    })
    startup["secondStartMs"] = second.startupMs
    console.log(`  ready after ${fmt(second.startupMs / 1000, 2)} s`)
    rows.push(...(await measureNode(second.baseUrl, "warning", first.apiKey!)))
    startup["secondShutdownMs"] = await second.stop()
  } catch (e) {
    writeResults({
      ok: false,
      error: e instanceof Error ? e.message : String(e),
      loadAverageBefore: loadBefore,
      rows,
      startup
    })
    throw e
  } finally {
    await stopAll()
  }

  const bare = rows[0]!
  console.log(`\n${table(rows, settings.concurrency)}\n`)
  console.log(`Against the bare baseline of this run (/v1/me is compared with bare /healthz, the only baseline):`)
  const ratios = rows.slice(1).map((r) => {
    const x = {
      label: r.label,
      throughput: ratio(r.throughput.rps, bare.throughput.rps),
      p50: ratio(r.latency.p50Ms, bare.latency.p50Ms),
      p99: ratio(r.latency.p99Ms, bare.latency.p99Ms)
    }
    console.log(
      `  ${x.label}: throughput = ${fmt(x.throughput, 2)}x bare; p50 = ${fmt(x.p50, 1)}x bare; p99 = ${
        fmt(x.p99, 1)
      }x bare`
    )
    return x
  })
  console.log(
    `\nStart-up (spawn to first 200 on /readyz): first start ${fmt(startup["firstStartMs"]! / 1000, 2)} s ` +
      `(fresh data dir, includes initdb), second start ${fmt(startup["secondStartMs"]! / 1000, 2)} s (same data dir).`
  )
  console.log(
    `Graceful shutdown (SIGTERM to exit): ${fmt(startup["firstShutdownMs"]! / 1000, 2)} s, ` +
      `${fmt(startup["secondShutdownMs"]! / 1000, 2)} s.`
  )
  console.log(
    `Note: ${Os.cpus().length} CPU core(s) shared by the server under test and this single-threaded load generator; ` +
      `the bare baseline is the one most bounded by the client, so the ratios understate Switchyard's overhead.`
  )

  const failed = reportErrors(rows)

  writeResults({
    ok: failed.length === 0,
    loadAverageBefore: loadBefore,
    rows,
    ratiosVsBare: ratios,
    startup
  })
  return { ok: failed.length === 0 }
}
