import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { measureThroughput, type Target } from "./support/load.js"
import {
  type Bare,
  cpuProfiling,
  cpuTimeMs,
  freePort,
  startNode,
  startScript,
  type SwitchyardNode,
  tempDir
} from "./support/processes.js"
import { fmt, warnIfBusy } from "./support/report.js"
import { appendRun, median, rounds, spread } from "./support/runs.js"
import { measureSpanCost } from "./support/spanCost.js"

/**
 * What observability costs (issue 23), measured in one run against nodes that differ only in it:
 *   - off: no SWITCHYARD_METRICS_PORT, no OTEL_EXPORTER_OTLP_ENDPOINT (the default);
 *   - metrics: SWITCHYARD_METRICS_PORT set, and scraped every second during the measurement;
 *   - tracing: OTEL_EXPORTER_OTLP_ENDPOINT set to a local OTLP/HTTP receiver in this process (protobuf, the
 *     default protocol), which reads every export and answers 200;
 *   - sampled: tracing with parentbased_traceidratio at 0.1;
 * for connector invokes/s (`POST /v1/tools/connectors/{id}/connections/{id}/getItem` against a local upstream)
 * and tasks/s (sync `POST /v1/agents/{id}/invoke` of a scripted agent that answers at once), each from
 * 16 closed-loop clients. The four nodes run side by side (each with its embedded PostgreSQL). Each round
 * starts them afresh (same data directories): two processes of the same build and settings differ here by up
 * to ±7% in CPU per task (what V8's compiler made of each, their PostgreSQL), and a node kept through every
 * round would carry its luck into each. In a round the nodes are measured in turns, windows of 2 s, twice
 * each, the order reversed the second time, so machine drift hits each alike; the ratio on/off is taken per
 * round, over both windows, and its median over the rounds reported (BENCH_RUNS rounds, 5 by default).
 * Before a round, each fresh node serves each kind of request for 6 s (BENCH_NODE_WARMUP_MS): a node in
 * production runs warm, and in its first seconds V8 is still compiling the request path, longer with tracing's
 * code on it (after 1 s, connector invokes traced measured 0.86× of off; after 6 s, 0.90–0.92×, with off itself
 * ~50% faster), so a shorter warm-up weighs the compiler's schedule more than the steady cost of a span.
 * Target: each ratio ≥ 0.90 (cost ≤ 10%). Beside throughput, the node process's own CPU time per request
 * (/proc, without its PostgreSQL) and its ratio on/off: on a machine shared with other work, CPU per request
 * moves less than requests/s.
 *
 * First, in this process, the tracers' CPU per span (support/spanCost.ts): @effect/opentelemetry's OtlpTracer
 * as the node ran it before against our SpanExporter, each creating, ending and encoding spans of 5 attributes.
 * BENCH_CPU_PROF=<dir> writes a .cpuprofile per node (read with support/cpuProfile.ts).
 * BENCH_OBSERVABILITY_CONTROL=1 runs the `metrics` node exactly as `off` (no port, no scrape): its ratio is
 * then what two identical nodes differ by in this bench, the noise floor the other ratios stand on.
 */
export const name = "observability"

const settings = {
  concurrency: 16,
  /** each node, after it starts, before a round measures it: each kind of request, this long */
  nodeWarmupMs: Number(process.env["BENCH_NODE_WARMUP_MS"] ?? 6000),
  /** before each window, untimed: the clients connect and the node picks up the pace */
  warmupMs: 300,
  durationMs: 2000,
  windowsPerRound: 2,
  scrapeEveryMs: 1000
} as const

const upstreamKey = "k"
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
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "the item" } }
      }
    }
  }
})

const post = async (url: string, apiKey: string, body: unknown): Promise<any> => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  if (response.status !== 201) throw new Error(`POST ${new URL(url).pathname}: ${response.status} ${text}`)
  return JSON.parse(text)
}

/** An OTLP/HTTP receiver that reads each export and answers 200: it counts requests and bytes. */
const startReceiver = async () => {
  const seen = { requests: 0, bytes: 0 }
  const server = Http.createServer((req, res) => {
    req.on("data", (c: Buffer) => void (seen.bytes += c.length))
    req.on("end", () => {
      seen.requests++
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

type Variant = "off" | "metrics" | "tracing" | "sampled"
const VARIANTS: ReadonlyArray<Variant> = ["off", "metrics", "tracing", "sampled"]

interface Setup {
  node: SwitchyardNode
  readonly start: () => Promise<SwitchyardNode>
  readonly metricsPort: number | undefined
  readonly invoke: (node: SwitchyardNode) => Target
  readonly task: (node: SwitchyardNode) => Target
}

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const tmp = tempDir("switchyard-bench-observability-")
  const loadBefore = warnIfBusy()
  const count = process.env["BENCH_RUNS"] === undefined ? 5 : rounds()
  const control = process.env["BENCH_OBSERVABILITY_CONTROL"] === "1"
  if (control) console.log("control run: the metrics node runs as off (BENCH_OBSERVABILITY_CONTROL=1)\n")
  let upstream: Bare | undefined
  const receiver = await startReceiver()
  const setups = new Map<Variant, Setup>()
  let errors = 0
  const { nodeArgs } = cpuProfiling()
  try {
    const spanCost = await measureSpanCost({ spans: 100_000, rounds: count + 2 })
    console.log("CPU per span (create under a parent, 5 attributes, end, batch, encode protobuf), in this process:")
    for (const [variant, c] of Object.entries(spanCost)) {
      console.log(
        `  ${variant.padEnd(8)} ${c.usPerSpan.toFixed(2)} µs (${c.min.toFixed(2)}–${c.max.toFixed(2)}), ` +
          `${fmt(c.bytesPerSpan)} B/span`
      )
    }
    console.log(`  lean / library: ${(spanCost.lean.usPerSpan / spanCost.library.usPerSpan).toFixed(3)}\n`)
    upstream = await startScript("upstreamServer.ts")
    for (const variant of VARIANTS) {
      const dataDir = Path.join(tmp, variant)
      Fs.mkdirSync(dataDir)
      // a port the system has free now (a random one can be a client connection's: EADDRINUSE)
      const metricsPort = variant === "metrics" && !control ? await freePort() : undefined
      const env: Record<string, string> = {
        SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
        ...(metricsPort === undefined ? {} : { SWITCHYARD_METRICS_PORT: String(metricsPort) }),
        ...(variant === "off" || variant === "metrics" ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
        // a production setting: one trace in ten kept, decided at the root, whole traces
        ...(variant === "sampled"
          ? { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }
          : {})
      }
      const start = (first: boolean) =>
        startNode({
          dataDir,
          logLevel: "warning",
          logFile: Path.join(tmp, `${variant}.log`),
          expectApiKey: first,
          env,
          nodeArgs
        })
      const node = await start(true)
      const apiKey = node.apiKey!
      const connector = await post(`${node.baseUrl}/v1/tools/connectors`, apiKey, { spec: spec(upstream.baseUrl) })
      const connection = await post(`${node.baseUrl}/v1/tools/connectors/${connector.id}/connections`, apiKey, {
        name: "bench",
        credentials: { type: "api_key", value: upstreamKey }
      })
      const agent = await post(`${node.baseUrl}/v1/agents`, apiKey, {
        name: "Bench agent",
        instructions: "Answer.",
        model: { provider: "scripted", script: [{ text: "done" }] }
      })
      const headers = { "x-api-key": apiKey, "content-type": "application/json" }
      setups.set(variant, {
        node,
        start: () => start(false),
        metricsPort,
        invoke: (at) => ({
          name: `${variant} connector invoke`,
          url: `${at.baseUrl}/v1/tools/connectors/${connector.id}/connections/${connection.id}/getItem`,
          method: "POST",
          headers,
          body: JSON.stringify({ path_params: { id: "42" } })
        }),
        task: (at) => ({
          name: `${variant} sync task`,
          url: `${at.baseUrl}/v1/agents/${agent.id}/invoke`,
          method: "POST",
          headers,
          body: JSON.stringify({ input: { text: "hi", user: { id: "u-1", email: "ada@example.com" } } })
        })
      })
      console.log(`${variant}: node up in ${fmt(node.startupMs)} ms ${JSON.stringify(env)}`)
    }

    const results: Record<Variant, { invoke: Array<number>; task: Array<number> }> = {
      off: { invoke: [], task: [] },
      metrics: { invoke: [], task: [] },
      tracing: { invoke: [], task: [] },
      sampled: { invoke: [], task: [] }
    }
    // the node process's own CPU ms per request, per round
    const cpu: Record<Variant, { invoke: Array<number>; task: Array<number> }> = {
      off: { invoke: [], task: [] },
      metrics: { invoke: [], task: [] },
      tracing: { invoke: [], task: [] },
      sampled: { invoke: [], task: [] }
    }
    // one window: requests and the node's CPU ms over it
    const measure = async (variant: Variant, kind: "invoke" | "task") => {
      const setup = setups.get(variant)!
      const target = setup[kind](setup.node)
      const scraper = setup.metricsPort === undefined ? undefined : setInterval(() => {
        fetch(`http://127.0.0.1:${setup.metricsPort}/metrics`).then((r) => r.text(), () => undefined)
      }, settings.scrapeEveryMs)
      try {
        await measureThroughput(target, { ...settings, durationMs: settings.warmupMs, warmupMs: 0 })
        const before = cpuTimeMs([setup.node.pid], { descendants: false })
        const t = await measureThroughput(target, { ...settings, warmupMs: 0 })
        const after = cpuTimeMs([setup.node.pid], { descendants: false })
        errors += t.errors
        if (t.errors > 0) console.log(`!!! ${variant} ${kind}: ${t.errors} errors ${JSON.stringify(t.statuses)}`)
        return { requests: t.requests, cpuMs: before === undefined || after === undefined ? undefined : after - before }
      } finally {
        if (scraper !== undefined) clearInterval(scraper)
      }
    }
    for (let round = 0; round < count; round++) {
      if (round > 0) {
        // fresh processes each round (see above)
        for (const setup of setups.values()) await setup.node.stop()
        for (const setup of setups.values()) setup.node = await setup.start()
      }
      for (const setup of setups.values()) {
        for (const kind of ["invoke", "task"] as const) {
          await measureThroughput(setup[kind](setup.node), {
            ...settings,
            warmupMs: 0,
            durationMs: settings.nodeWarmupMs
          })
        }
      }
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]!)
      for (const kind of ["invoke", "task"] as const) {
        const sums = new Map(VARIANTS.map((v) => [v, { requests: 0, cpuMs: 0 as number | undefined }]))
        for (let w = 0; w < settings.windowsPerRound; w++) {
          for (const variant of w % 2 === 0 ? order : [...order].reverse()) {
            const m = await measure(variant, kind)
            const sum = sums.get(variant)!
            sum.requests += m.requests
            sum.cpuMs = sum.cpuMs === undefined || m.cpuMs === undefined ? undefined : sum.cpuMs + m.cpuMs
          }
        }
        const line: Array<string> = []
        for (const variant of order) {
          const sum = sums.get(variant)!
          const rps = sum.requests / (settings.windowsPerRound * settings.durationMs / 1000)
          results[variant][kind].push(rps)
          if (sum.cpuMs !== undefined) cpu[variant][kind].push(sum.cpuMs / sum.requests)
          line.push(`${variant} ${fmt(rps)}/s`)
        }
        console.log(`round ${round + 1} ${kind}: ${line.join(", ")}`)
      }
    }

    const ratios = (variant: Variant, kind: "invoke" | "task") =>
      results[variant][kind].map((rps, i) => rps / results.off[kind][i]!)
    const cpuRatios = (variant: Variant, kind: "invoke" | "task") =>
      cpu[variant][kind].map((ms, i) => ms / cpu.off[kind][i]!)
    const cpuSummary = (kind: "invoke" | "task") => ({
      off: spread(cpu.off[kind]),
      metrics: spread(cpu.metrics[kind]),
      tracing: spread(cpu.tracing[kind]),
      sampled: spread(cpu.sampled[kind]),
      metricsVsOff: spread(cpuRatios("metrics", kind)),
      tracingVsOff: spread(cpuRatios("tracing", kind)),
      sampledVsOff: spread(cpuRatios("sampled", kind))
    })
    const summary = {
      connectorInvokesPerSecond: {
        off: spread(results.off.invoke),
        metrics: spread(results.metrics.invoke),
        tracing: spread(results.tracing.invoke),
        sampled: spread(results.sampled.invoke),
        metricsVsOff: spread(ratios("metrics", "invoke")),
        tracingVsOff: spread(ratios("tracing", "invoke")),
        sampledVsOff: spread(ratios("sampled", "invoke"))
      },
      tasksPerSecond: {
        off: spread(results.off.task),
        metrics: spread(results.metrics.task),
        tracing: spread(results.tracing.task),
        sampled: spread(results.sampled.task),
        metricsVsOff: spread(ratios("metrics", "task")),
        tracingVsOff: spread(ratios("tracing", "task")),
        sampledVsOff: spread(ratios("sampled", "task"))
      },
      nodeCpuMsPerConnectorInvoke: cpuSummary("invoke"),
      nodeCpuMsPerTask: cpuSummary("task"),
      cpuPerSpanUs: spanCost,
      otlpExports: { ...receiver.seen }
    }
    console.log("\nmedian of per-round ratios against off (target ≥ 0.90):")
    for (const [kind, label] of [["invoke", "connector invokes/s"], ["task", "tasks/s"]] as const) {
      for (const variant of ["metrics", "tracing", "sampled"] as const) {
        const r = median(ratios(variant, kind))
        console.log(
          `  ${label.padEnd(20)} ${variant.padEnd(8)} ${r.toFixed(3)}  ${r >= 0.9 ? "PASS" : "MISS"}  ` +
            `(off ${fmt(median(results.off[kind]))}/s, on ${fmt(median(results[variant][kind]))}/s)`
        )
      }
    }
    console.log("\nnode CPU per request (its own process), median of per-round ratios against off (target ≤ 1.10):")
    for (const [kind, label] of [["invoke", "connector invoke"], ["task", "task"]] as const) {
      for (const variant of ["metrics", "tracing", "sampled"] as const) {
        if (cpu[variant][kind].length === 0) continue
        console.log(
          `  ${label.padEnd(20)} ${variant.padEnd(8)} ${median(cpuRatios(variant, kind)).toFixed(3)}  ` +
            `(off ${median(cpu.off[kind]).toFixed(3)} ms, on ${median(cpu[variant][kind]).toFixed(3)} ms)`
        )
      }
    }
    console.log(`OTLP receiver: ${receiver.seen.requests} exports, ${fmt(receiver.seen.bytes / 1024)} KiB`)
    appendRun(name, { ...settings, rounds: count, method: "fresh nodes per round", control }, {
      ok: errors === 0,
      loadBefore,
      errors,
      ...summary
    })
    return { ok: errors === 0 }
  } finally {
    for (const setup of setups.values()) await setup.node.stop()
    await upstream?.stop()
    await receiver.close()
  }
}
