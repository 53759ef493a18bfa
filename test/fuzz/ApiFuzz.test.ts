import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { setPassword } from "../mcp/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { fuzz } from "./FuzzRun.js"
import { type FuzzWorld, makeFuzzWorld } from "./FuzzWorld.js"
import { mcpTarget } from "./McpTarget.js"
import { type Operation, operationsOf } from "./Operations.js"
import { closeConnections } from "./RawHttp.js"
import { report, titleOf } from "./Report.js"
import { restTarget } from "./RestTarget.js"
import { fuzzSettings } from "./Settings.js"
import { escapes, hostileUpstream } from "./Upstream.js"

/**
 * Property-based fuzz of the live API (issue 19, "Keep them found"): requests generated from the served
 * OpenAPI document and the contracts in schema/, valid and hostile, sent as every role of two
 * organizations. Fixed seed and a bounded number of runs for CI; FUZZ_RUNS / FUZZ_SEED for more, or
 * `npm run bench -- fuzz` for the large run.
 */
const settings = fuzzSettings({ runs: 1000, mcpRuns: 300, shrinkMs: 30_000 })

let node: TestNode
let target: TargetServer
let world: FuzzWorld
let operations: ReadonlyArray<Operation>
beforeAll(async () => {
  target = await startTargetServer(hostileUpstream)
  node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    // a small limit keeps the over-limit bodies cheap to send
    SWITCHYARD_MAX_BODY_BYTES: String(1024 * 1024)
  })
  world = await makeFuzzWorld({
    baseUrl: node.baseUrl,
    bootstrap: (organization) => node.bootstrap(organization),
    setPassword: (email, password) => setPassword(node, email, password)
  }, target.url)
  operations = operationsOf(await (await fetch(`${node.baseUrl}/openapi.json`)).json())
})
afterAll(async () => {
  closeConnections()
  await node?.stop()
  await target?.close()
})

describe("API fuzz", () => {
  it(
    "REST: every operation, as every role, answers in time with a documented status, the one error envelope, and never 2xx on another organization's id",
    async () => {
      expect(operations.length).toBeGreaterThan(50)
      const rest = restTarget(node.baseUrl, operations, world, settings.timeoutMs, escapes(target.requests))
      const result = await fuzz(rest, settings.rest)
      const summary = report(rest, settings.rest, result)
      console.log(summary)
      expect(result.findings.map(titleOf), summary).toEqual([])
    },
    600_000
  )

  it(
    "MCP tools/call: hostile arguments get a JSON-RPC or tool error, never an internal error (-32603, `internal_error`)",
    async () => {
      const mcp = await mcpTarget(node.baseUrl, world, settings.timeoutMs)
      const result = await fuzz(mcp, settings.mcp)
      const summary = report(mcp, settings.mcp, result)
      console.log(summary)
      expect(result.findings.map(titleOf), summary).toEqual([])
    },
    600_000
  )
})
