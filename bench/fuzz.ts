import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fuzz, type FuzzResult } from "../test/fuzz/FuzzRun.js"
import { type FuzzHost, makeFuzzWorld } from "../test/fuzz/FuzzWorld.js"
import { mcpTarget } from "../test/fuzz/McpTarget.js"
import { operationsOf } from "../test/fuzz/Operations.js"
import { closeConnections } from "../test/fuzz/RawHttp.js"
import { report } from "../test/fuzz/Report.js"
import { restTarget } from "../test/fuzz/RestTarget.js"
import { fuzzSettings } from "../test/fuzz/Settings.js"
import { escapes, hostileUpstream } from "../test/fuzz/Upstream.js"
import { startTargetServer } from "../test/support/TargetServer.js"
import { repoRoot, startNode, stopAll, tempDir } from "./support/processes.js"

/**
 * The nightly-size run of test/fuzz/ApiFuzz.test.ts: the same generators and checks against a node started
 * as `switchyard serve` (its own embedded PostgreSQL), with many more runs. FUZZ_RUNS, FUZZ_MCP_RUNS,
 * FUZZ_SEED, FUZZ_SHRINK_MS and FUZZ_TIMEOUT_MS change the size, seed and limits. Prints each distinct
 * failure with its minimal counterexample, and how many unhandled errors the node logged.
 */
export const name = "fuzz"

/** `switchyard <args>` next to the running node (it uses the node's embedded PostgreSQL). */
const cli = (dataDir: string, args: ReadonlyArray<string>, stdin = "") =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/switchyard.js", ...args], {
      cwd: repoRoot,
      env: { ...process.env, SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_LOG_LEVEL: "warning" },
      stdio: ["pipe", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (c: Buffer) => (out += c.toString()))
    child.stdin.end(stdin)
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`switchyard ${args[0]} exited ${code}`))))
  })

/** The node's `unhandled error` log lines (JSON, one a line) by cause, quoted values left out (the inputs). */
const unhandledErrors = (log: string) => {
  const causes = new Map<string, number>()
  for (const line of log.split("\n")) {
    let entry: any
    try {
      entry = JSON.parse(line)
    } catch {
      continue
    }
    if (entry?.message !== "unhandled error") continue
    const text = String(entry.cause ?? "")
    const root = /\[cause\]: (.*)/.exec(text)?.[1] ?? text.split("\n")[0]!
    const cause = root.replace(/"[^"]*"/g, "\"…\"").slice(0, 160)
    causes.set(cause, (causes.get(cause) ?? 0) + 1)
  }
  const total = [...causes.values()].reduce((a, b) => a + b, 0)
  return [
    `The node logged ${total} unhandled error(s)${total > 0 ? ", by cause:" : "."}`,
    ...[...causes.entries()].sort(([, a], [, b]) => b - a).map(([cause, n]) => `  ${n}× ${cause}`)
  ].join("\n")
}

export const run = async (): Promise<{ readonly ok: boolean }> => {
  const settings = fuzzSettings({ runs: 5000, mcpRuns: 1500, shrinkMs: 120_000 })
  const tmp = tempDir("switchyard-bench-fuzz-")
  const dataDir = Path.join(tmp, "data")
  const logFile = Path.join(tmp, "node.log")
  Fs.mkdirSync(dataDir)
  const target = await startTargetServer(hostileUpstream)
  const results: Array<FuzzResult> = []
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile,
      expectApiKey: false,
      env: {
        SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
        SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
        SWITCHYARD_MAX_BODY_BYTES: String(1024 * 1024)
      }
    })
    let n = 0
    const host: FuzzHost = {
      baseUrl: node.baseUrl,
      bootstrap: async (organization) =>
        JSON.parse(
          await cli(dataDir, ["bootstrap", "--org", organization, "--email", `fuzz-${++n}@example.com`, "--json"])
        ),
      setPassword: async (email, password) =>
        void (await cli(dataDir, ["users", "set-password", "--email", email], `${password}\n`))
    }
    const world = await makeFuzzWorld(host, target.url)
    const operations = operationsOf(await (await fetch(`${node.baseUrl}/openapi.json`)).json())
    console.log(
      `Node at ${node.baseUrl}; ${operations.length} operations; timeout ${settings.timeoutMs} ms per request\n`
    )

    const rest = restTarget(node.baseUrl, operations, world, settings.timeoutMs, escapes(target.requests))
    const restResult = await fuzz(rest, settings.rest)
    results.push(restResult)
    console.log(`${report(rest, settings.rest, restResult)}\n`)

    const mcp = await mcpTarget(node.baseUrl, world, settings.timeoutMs)
    const mcpResult = await fuzz(mcp, settings.mcp)
    results.push(mcpResult)
    console.log(`${report(mcp, settings.mcp, mcpResult)}\n`)

    await node.stop()
    console.log(unhandledErrors(Fs.readFileSync(logFile, "utf8")))
  } finally {
    closeConnections()
    await target.close()
    await stopAll()
  }
  const failures = results.reduce((n, r) => n + r.findings.length, 0)
  console.log(failures === 0 ? "No failures." : `${failures} distinct failure(s): see above.`)
  return { ok: failures === 0 }
}
