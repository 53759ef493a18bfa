import * as Path from "node:path"
import { measureLatency, measureThroughput, type Target } from "./support/load.js"
import { cpuTimeMs, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt, ratio, warnIfBusy } from "./support/report.js"
import { appendToList, median, rounds } from "./support/runs.js"

/**
 * Custom functions (issue 25), on one node with its embedded PostgreSQL:
 *   - warm invoke: `POST /v1/functions/{id}/invoke` of a trivial function, one request at a time (p50, p99),
 *     against `GET /v1/me` on the same connection kind (the API's floor);
 *   - throughput: invokes/s at 8 concurrent callers, and per CPU-second of the node (its worker threads and
 *     its PostgreSQL included), i.e. functions/s per core;
 *   - isolation: p99 of `GET /v1/agents` while 10 hostile functions (infinite loops, each stopped at its
 *     timeout and started again) run, against the same p99 with none (ratio).
 * Each round measures its own baselines; the medians of the rounds are appended to bench/results/functions.json.
 */
export const name = "functions"

const settings = {
  latencyRequests: 2000,
  warmup: 300,
  concurrency: 8,
  throughputMs: 5000,
  agentsRequests: 1000,
  hostile: 10,
  hostileTimeoutMs: 2000
} as const

/** Informational targets, printed as PASS/MISS. */
const targets = { invokeP50Ms: 2, agentsP99Ratio: 2 } as const

const json = (apiKey: string) => ({ "x-api-key": apiKey, "content-type": "application/json" })

export const run = async () => {
  const load = warnIfBusy()
  const tmp = tempDir("bench-functions-")
  try {
    const node = await startNode({
      dataDir: Path.join(tmp, "data"),
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    const apiKey = node.apiKey!
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${node.baseUrl}${path}`, {
        method: "POST",
        headers: json(apiKey),
        body: JSON.stringify(body)
      })
      if (r.status !== 201) throw new Error(`${path}: ${r.status} ${await r.text()}`)
      return r.json() as Promise<{ id: string }>
    }
    const trivial = await post("/v1/functions", { name: "trivial", code: "export default async (input) => input" })
    const hostile = await post("/v1/functions", {
      name: "spin",
      code: "export default async () => { for (;;) {} }",
      timeout_ms: settings.hostileTimeoutMs
    })
    await post("/v1/agents", { name: "bench", model: { provider: "scripted", script: [{ text: "hi" }] } })

    const invoke: Target = {
      name: "invoke",
      url: `${node.baseUrl}/v1/functions/${trivial.id}/invoke`,
      method: "POST",
      headers: json(apiKey),
      body: JSON.stringify({ input: { n: 1 } })
    }
    const me: Target = { name: "me", url: `${node.baseUrl}/v1/me`, headers: { "x-api-key": apiKey } }
    const agents: Target = { name: "agents", url: `${node.baseUrl}/v1/agents`, headers: { "x-api-key": apiKey } }

    const rows: Array<Record<string, number>> = []
    const hostileOutcomes: Array<Record<string, number>> = []
    let errors = 0
    for (let round = 1; round <= rounds(); round++) {
      const invokeLatency = await measureLatency(invoke, {
        warmup: settings.warmup,
        requests: settings.latencyRequests
      })
      const meLatency = await measureLatency(me, { warmup: settings.warmup, requests: settings.latencyRequests })
      const cpuBefore = cpuTimeMs([node.pid]) ?? Number.NaN
      const throughput = await measureThroughput(invoke, {
        concurrency: settings.concurrency,
        warmupMs: 0,
        durationMs: settings.throughputMs
      })
      const cpuSeconds = ((cpuTimeMs([node.pid]) ?? Number.NaN) - cpuBefore) / 1000
      const quiet = await measureLatency(agents, { warmup: 100, requests: settings.agentsRequests })

      // 10 hostile functions, each started again as soon as its timeout ends it
      let stop = false
      const outcomes: Record<string, number> = {}
      const spinner = async () => {
        while (!stop) {
          const r = await fetch(`${node.baseUrl}/v1/functions/${hostile.id}/invoke`, {
            method: "POST",
            headers: json(apiKey),
            body: "{}"
          })
          const code = ((await r.json()) as { error?: { code?: string } }).error?.code ?? String(r.status)
          outcomes[code] = (outcomes[code] ?? 0) + 1
        }
      }
      const spinners = Array.from({ length: settings.hostile }, spinner)
      await new Promise((r) => setTimeout(r, 300))
      const busy = await measureLatency(agents, { warmup: 20, requests: settings.agentsRequests })
      stop = true
      await Promise.all(spinners)

      errors += invokeLatency.errors + meLatency.errors + throughput.errors + quiet.errors + busy.errors
      const row = {
        invokeP50Ms: invokeLatency.p50Ms,
        invokeP99Ms: invokeLatency.p99Ms,
        meP50Ms: meLatency.p50Ms,
        invokesPerSecond: throughput.rps,
        nodeCpuSeconds: cpuSeconds,
        invokesPerCpuSecond: throughput.requests / cpuSeconds,
        agentsP99QuietMs: quiet.p99Ms,
        agentsP99HostileMs: busy.p99Ms,
        agentsP50QuietMs: quiet.p50Ms,
        agentsP50HostileMs: busy.p50Ms,
        hostileStopped: outcomes["function_timeout"] ?? 0,
        hostileOther: Object.entries(outcomes).filter(([k]) => k !== "function_timeout").reduce((a, [, n]) => a + n, 0)
      }
      rows.push(row)
      hostileOutcomes.push(outcomes)
      console.log(
        `  round ${round}: invoke p50 ${fmt(row.invokeP50Ms, 2)} ms p99 ${fmt(row.invokeP99Ms, 2)} ms (GET /v1/me p50 ${
          fmt(row.meP50Ms, 2)
        } ms); ${fmt(row.invokesPerSecond)} invokes/s at ${settings.concurrency}, ${
          fmt(row.invokesPerCpuSecond)
        } per CPU-second; GET /v1/agents p99 ${fmt(row.agentsP99QuietMs, 2)} ms quiet, ${
          fmt(row.agentsP99HostileMs, 2)
        } ms with ${settings.hostile} spinning (${row.hostileStopped} stopped at their timeout, other outcomes: ${
          JSON.stringify(Object.fromEntries(Object.entries(outcomes).filter(([k]) => k !== "function_timeout")))
        })`
      )
    }
    const m = (key: string) => median(rows.map((r) => r[key]!))
    const summary = {
      invokeP50Ms: m("invokeP50Ms"),
      invokeP99Ms: m("invokeP99Ms"),
      meP50Ms: m("meP50Ms"),
      invokeOverMeP50: ratio(m("invokeP50Ms"), m("meP50Ms")),
      invokesPerSecond: m("invokesPerSecond"),
      invokesPerCpuSecond: m("invokesPerCpuSecond"),
      agentsP99QuietMs: m("agentsP99QuietMs"),
      agentsP99HostileMs: m("agentsP99HostileMs"),
      agentsP99Ratio: ratio(m("agentsP99HostileMs"), m("agentsP99QuietMs")),
      agentsP50Ratio: ratio(m("agentsP50HostileMs"), m("agentsP50QuietMs"))
    }
    console.log(
      `\n  warm invoke p50 ${fmt(summary.invokeP50Ms, 2)} ms (${
        summary.invokeP50Ms <= targets.invokeP50Ms ? "PASS" : "MISS"
      } ` +
        `<= ${targets.invokeP50Ms} ms; ${fmt(summary.invokeOverMeP50, 2)}x GET /v1/me), ` +
        `${fmt(summary.invokesPerCpuSecond)} functions per CPU-second (${fmt(summary.invokesPerSecond)}/s)\n` +
        `  GET /v1/agents p99 with ${settings.hostile} hostile functions: ${fmt(summary.agentsP99Ratio, 2)}x quiet ` +
        `(${summary.agentsP99Ratio <= targets.agentsP99Ratio ? "PASS" : "MISS"} <= ${targets.agentsP99Ratio}x; p50 ${
          fmt(summary.agentsP50Ratio, 2)
        }x)`
    )
    appendToList(name, settings, { load, rounds: rows, hostileOutcomes, summary, targets, errors })
    await node.stop()
    return { ok: errors === 0 }
  } finally {
    await stopAll()
  }
}
