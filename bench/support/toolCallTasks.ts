import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { measureThroughput, percentile, type Target } from "./load.js"
import { cpuTimeMs, startNode, stopAll, tempDir } from "./processes.js"
import { stepsSpec } from "./stepsSpec.js"

/**
 * Tasks that call tools, on one node: sync invokes (16 producers) of a scripted agent that makes
 * TOOL_CALLS connector calls to a local HTTP server, then answers
 * (`node --import tsx bench/support/toolCallTasks.ts [rounds]`). Prints tasks/s and the CPU time the node
 * and its PostgreSQL spent per task, per round and their medians. Run it in two checkouts (e.g. a
 * `git worktree` of each commit, this file copied in) alternately to price a change to the tool-call path:
 * the fenced runs (each tool call marked in flight first) were measured so.
 */
const ROUNDS = Number(process.argv[2]) || 3
const TOOL_CALLS = 3
const BLOCK_MS = 6000

const main = async () => {
  const tmp = tempDir("probe-tool-calls-")
  const upstream = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{\"ok\":true}")
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
  try {
    const node = await startNode({
      dataDir: Path.join(tmp, "data"),
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true,
      env: { SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" }
    })
    const headers = { "x-api-key": node.apiKey!, "content-type": "application/json" }
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${node.baseUrl}${path}`, { method: "POST", headers, body: JSON.stringify(body) })
      const json = await response.json() as { id: string }
      if (response.status !== 201) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`)
      return json
    }
    const connector = await post("/v1/tools/connectors", {
      spec: stepsSpec(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`)
    })
    const connection = await post(`/v1/tools/connectors/${connector.id}/connections`, {
      name: "steps",
      credentials: { type: "none" }
    })
    const agent = await post("/v1/agents", {
      name: "tools",
      model: {
        provider: "scripted",
        script: [
          ...Array.from({ length: TOOL_CALLS }, (_, i) => ({
            tool_calls: [{ name: "step", arguments: { path_params: { id: `s${i + 1}` } } }]
          })),
          { text: "done" }
        ]
      },
      skills: [{ connection_id: connection.id, operation_ids: ["step"] }]
    })
    const target: Target = {
      name: "sync invoke with tool calls",
      url: `${node.baseUrl}/v1/agents/${agent.id}/invoke`,
      method: "POST",
      headers,
      body: JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })
    }
    const rps: Array<number> = []
    const cpu: Array<number> = []
    await measureThroughput(target, { concurrency: 16, warmupMs: 0, durationMs: 4000 })
    for (let round = 0; round < ROUNDS; round++) {
      const before = cpuTimeMs([node.pid])!
      const result = await measureThroughput(target, { concurrency: 16, warmupMs: 0, durationMs: BLOCK_MS })
      cpu.push((cpuTimeMs([node.pid])! - before) * 1000 / result.requests)
      rps.push(result.rps)
      console.log(
        `  ${result.rps.toFixed(0)} tasks/s, ${cpu.at(-1)!.toFixed(0)} µs CPU per task (${result.errors} errors)`
      )
    }
    const median = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)
    console.log(
      `median: ${median(rps).toFixed(0)} tasks/s (${TOOL_CALLS} tool calls each), ${
        median(cpu).toFixed(0)
      } µs CPU per task (node and PostgreSQL)`
    )
    await node.stop()
  } finally {
    await stopAll()
    upstream.close()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
