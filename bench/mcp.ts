import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { obtainTokens, openSession } from "../test/mcp/support.js"
import type { TestNode } from "../test/support/TestNode.js"
import { measureLatency, measureThroughput, type Target } from "./support/load.js"
import { cpuProfiling, cpuTimeMs, repoRoot, startNode, startScript, stopAll, tempDir } from "./support/processes.js"
import { ratio, reportErrors, table, warnIfBusy } from "./support/report.js"
import { appendRun, fmtSpread, rounds, spread } from "./support/runs.js"

/**
 * A connector operation called as an MCP tool against the same call over REST, in one run on 127.0.0.1:
 *   - rest (the baseline): `POST /v1/tools/connectors/{id}/connections/{id}/getItem` with `x-api-key`;
 *   - mcp: `POST /mcp/` with a bearer token from the OAuth flow, an open session, and the JSON-RPC
 *     `tools/call` of `invoke_operation` for the same operation (the answer wrapped as a tool result).
 * Sequential latency (concurrency 1) and throughput at concurrency 50; the node at log level warning, both
 * paths warmed for 2 s each first. In BENCH_RUNS rounds (3 by default), each measuring both (which goes first
 * alternates), so every ratio compares figures of one round; each invocation appends its rounds and their
 * spread to bench/results/mcp.json.
 */
export const name = "mcp"

const settings = {
  concurrency: 50,
  warmupMs: 1000,
  durationMs: 5000,
  latencyWarmup: 200,
  latencyRequests: 2000
} as const
/** Informational targets (issue 21), on the medians: MCP p50 / REST p50 at most, MCP req/s / REST req/s at least. */
const targets = { latency: 1.2, throughput: 0.8 } as const
const PASSWORD = "bench password 1234"

const post = async (url: string, apiKey: string, body: unknown) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  if (response.status !== 201) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`)
  return (await response.json()) as { readonly id: string }
}

/** `switchyard users set-password` next to the running node (it uses the node's embedded PostgreSQL). */
const setPassword = (dataDir: string, email: string) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/switchyard.js", "users", "set-password", "--email", email], {
      cwd: repoRoot,
      env: { ...process.env, SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_LOG_LEVEL: "warning" },
      stdio: ["pipe", "ignore", "inherit"]
    })
    child.stdin.end(`${PASSWORD}\n`)
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`set-password exited ${code}`))))
  })

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const tmp = tempDir("switchyard-bench-mcp-")
  const dataDir = Path.join(tmp, "data")
  Fs.mkdirSync(dataDir)
  const loadBefore = warnIfBusy()
  type Measured = { readonly label: string } & Awaited<ReturnType<typeof measureBoth>>
  const count = rounds()
  const done: Array<{ readonly round: number; readonly rest: Measured; readonly mcp: Measured }> = []
  // with BENCH_CPU_PROF: each measurement's window on the monotonic clock (µs), for cpuProfile.ts --from/--to
  const windows: Array<{ readonly label: string; readonly fromUs: bigint; readonly toUs: bigint }> = []
  const monotonicUs = () => process.hrtime.bigint() / 1000n
  let nodePid = 0
  let upstreamPid = 0
  const measureBoth = async (target: Target) => {
    process.stdout.write(`  ${target.name} ...`)
    const fromUs = monotonicUs()
    // the node's CPU time (with its PostgreSQL) per request over the throughput window: less skewed by other
    // work on the machine than req/s
    // and, to tell the node's share from the rest of the machine's, the load generator's (this process) and
    // the upstream's
    type Reading = { readonly node: number | undefined; readonly client: number; readonly upstream: number | undefined }
    const read = (): Reading => {
      const own = process.cpuUsage()
      return {
        node: cpuTimeMs([nodePid]),
        client: (own.user + own.system) / 1000,
        upstream: cpuTimeMs([upstreamPid])
      }
    }
    let cpuFrom: Reading | undefined
    let cpuTo: Reading | undefined
    const timers = [
      setTimeout(() => (cpuFrom = read()), settings.warmupMs),
      setTimeout(() => (cpuTo = read()), settings.warmupMs + settings.durationMs)
    ]
    const throughput = await measureThroughput(target, settings)
    for (const t of timers) clearTimeout(t)
    // on a busy machine the closing timer can still be waiting when the last worker is done: read it now
    if (cpuFrom !== undefined && cpuTo === undefined) cpuTo = read()
    const perRequest = (part: keyof Reading) => {
      const from = cpuFrom?.[part]
      const to = cpuTo?.[part]
      return from === undefined || to === undefined || throughput.requests === 0
        ? null
        : (to - from) / throughput.requests
    }
    const cpuMsPerRequest = perRequest("node")
    const clientCpuMsPerRequest = perRequest("client")
    const upstreamCpuMsPerRequest = perRequest("upstream")
    const latency = await measureLatency(target, { warmup: settings.latencyWarmup, requests: settings.latencyRequests })
    windows.push({ label: target.name, fromUs, toUs: monotonicUs() })
    process.stdout.write(
      ` ${Math.round(throughput.rps)} req/s, p50 ${latency.p50Ms.toFixed(3)} ms, CPU ${
        cpuMsPerRequest?.toFixed(3) ?? "n/a"
      } ms/request (load generator ${clientCpuMsPerRequest?.toFixed(3) ?? "n/a"}, upstream ${
        upstreamCpuMsPerRequest?.toFixed(3) ?? "n/a"
      })\n`
    )
    return { throughput, latency, cpuMsPerRequest, clientCpuMsPerRequest, upstreamCpuMsPerRequest }
  }
  try {
    const upstream = await startScript("upstreamServer.ts")
    upstreamPid = upstream.pid
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true,
      env: { SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" },
      // BENCH_CPU_PROF=<dir>: a .cpuprofile of the node (read it with bench/support/cpuProfile.ts)
      nodeArgs: cpuProfiling().nodeArgs
    })
    nodePid = node.pid
    const apiKey = node.apiKey!
    const connector = await post(`${node.baseUrl}/v1/tools/connectors`, apiKey, {
      spec: {
        openapi: "3.0.3",
        info: { title: "Bench items", version: "1.0" },
        servers: [{ url: upstream.baseUrl }],
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
      }
    })
    const connection = await post(`${node.baseUrl}/v1/tools/connectors/${connector.id}/connections`, apiKey, {
      name: "bench",
      credentials: { type: "api_key", value: "k" }
    })
    const email = "admin@localhost"
    await setPassword(dataDir, email)
    // the resource is the node's public URL (http://localhost:<port>/mcp/ here), as clients read it
    const { resource } = await (await fetch(`${node.baseUrl}/.well-known/oauth-protected-resource`)).json()
    const { tokens } = await obtainTokens({ baseUrl: node.baseUrl } as TestNode, email, {
      password: PASSWORD,
      resource
    })
    const session = await openSession(node.baseUrl, tokens.access_token)

    const rest: Target = {
      name: "REST invoke getItem",
      url: `${node.baseUrl}/v1/tools/connectors/${connector.id}/connections/${connection.id}/getItem`,
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ path_params: { id: "42" } })
    }
    const mcp: Target = {
      name: "MCP tools/call invoke_operation getItem",
      url: `${node.baseUrl}/mcp/`,
      method: "POST",
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
        accept: "application/json, text/event-stream",
        "content-type": "application/json"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: {
          name: "invoke_operation",
          arguments: {
            connector_id: connector.id,
            connection_id: connection.id,
            operation_id: "getItem",
            path_params: { id: "42" }
          }
        }
      })
    }
    const restBody = await (await fetch(rest.url, { method: "POST", headers: rest.headers!, body: rest.body! })).json()
    const mcpAnswer = await (await fetch(mcp.url, { method: "POST", headers: mcp.headers!, body: mcp.body! })).json()
    if (JSON.stringify(mcpAnswer.result?.structuredContent?.body) !== JSON.stringify(restBody)) {
      throw new Error(`the MCP answer differs from the REST one: ${JSON.stringify(mcpAnswer).slice(0, 300)}`)
    }
    console.log(`Node at log level warning; upstream ~1 KB JSON; the MCP call carries the same upstream body`)
    // both paths warmed before any round (JIT, pools, caches): otherwise round 1's first target runs cold and
    // reads ~25% more CPU per request than later rounds do
    for (const target of [rest, mcp]) await measureThroughput(target, { ...settings, warmupMs: 0, durationMs: 2000 })
    for (let round = 1; round <= count; round++) {
      console.log(`\nRound ${round} of ${count}`)
      const first = round % 2 === 1 ? rest : mcp
      const second = first === rest ? mcp : rest
      const a = { label: first.name, ...(await measureBoth(first)) }
      const b = { label: second.name, ...(await measureBoth(second)) }
      const [r, m] = first === rest ? [a, b] : [b, a]
      console.log(`\n${table([r, m], settings.concurrency)}`)
      done.push({ round, rest: r, mcp: m })
    }
    await node.stop()
    await upstream.stop()
  } finally {
    await stopAll()
  }
  const ratios = done.map(({ mcp, rest }) => ({
    p50: ratio(mcp.latency.p50Ms, rest.latency.p50Ms),
    p99: ratio(mcp.latency.p99Ms, rest.latency.p99Ms),
    throughput: ratio(mcp.throughput.rps, rest.throughput.rps),
    cpu: ratio(mcp.cpuMsPerRequest ?? Number.NaN, rest.cpuMsPerRequest ?? Number.NaN)
  }))
  const summary = {
    p50: spread(ratios.map((x) => x.p50)),
    p99: spread(ratios.map((x) => x.p99)),
    throughput: spread(ratios.map((x) => x.throughput)),
    restRps: spread(done.map((x) => x.rest.throughput.rps)),
    mcpRps: spread(done.map((x) => x.mcp.throughput.rps)),
    // over the rounds whose CPU time was read
    cpu: spread(ratios.map((x) => x.cpu).filter(Number.isFinite)),
    restCpuMs: spread(done.flatMap((x) => x.rest.cpuMsPerRequest ?? [])),
    mcpCpuMs: spread(done.flatMap((x) => x.mcp.cpuMsPerRequest ?? [])),
    restClientCpuMs: spread(done.flatMap((x) => x.rest.clientCpuMsPerRequest ?? [])),
    mcpClientCpuMs: spread(done.flatMap((x) => x.mcp.clientCpuMsPerRequest ?? []))
  }
  const latency = summary.p50.median
  const throughput = summary.throughput.median
  const verdict = (ok: boolean) => (ok ? "PASS" : "MISS")
  console.log(`\nMedian [min–max] over ${count} rounds (targets informational; a miss does not fail the run):`)
  console.log(
    `  ${verdict(latency <= targets.latency)}  MCP p50 / REST p50 = ${
      fmtSpread(summary.p50, 2)
    }x (target <= ${targets.latency}x; p99 ${fmtSpread(summary.p99, 2)}x)`
  )
  console.log(
    `  ${verdict(throughput >= targets.throughput)}  MCP req/s / REST req/s = ${
      fmtSpread(summary.throughput, 2)
    }x (target >= ${targets.throughput}x)`
  )
  console.log(
    `  CPU per request (node and its PostgreSQL): MCP ${fmtSpread(summary.mcpCpuMs, 3)} ms, REST ${
      fmtSpread(summary.restCpuMs, 3)
    } ms: ${fmtSpread(summary.cpu, 2)}x`
  )
  console.log(
    `  The load generator's CPU per request: MCP ${fmtSpread(summary.mcpClientCpuMs, 3)} ms, REST ${
      fmtSpread(summary.restClientCpuMs, 3)
    } ms`
  )
  console.log(
    `\nNote: ${Os.cpus().length} core(s) shared by the load generator, the node, its PostgreSQL and the upstream.`
  )
  if (process.env["BENCH_CPU_PROF"]) {
    console.log(`\nCPU profile of the node is in ${Path.resolve(process.env["BENCH_CPU_PROF"])}. Windows:`)
    for (const w of windows) {
      console.log(`  ${w.label}: node --import tsx bench/support/cpuProfile.ts FILE --from ${w.fromUs} --to ${w.toUs}`)
    }
  }
  const failed = reportErrors(done.flatMap((x) => [x.rest, x.mcp]))
  appendRun(name, { ...settings, rounds: count, logLevel: "warning", targets }, {
    ok: failed.length === 0,
    loadAverageBefore: loadBefore,
    loadAverageAfter: Os.loadavg()[0],
    summary,
    rounds: done.map((x, i) => ({ ...x, ratios: ratios[i] })),
    targets: {
      latency: { max: targets.latency, value: latency, pass: latency <= targets.latency },
      throughput: { min: targets.throughput, value: throughput, pass: throughput >= targets.throughput }
    }
  })
  return { ok: failed.length === 0 }
}
