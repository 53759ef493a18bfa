import * as Fs from "node:fs"
import * as Path from "node:path"
import pg from "pg"
import { statements as eventWrites0021 } from "../../src/db/migrations/0021_event_writes.js"
import { statements as eventWrites } from "../../src/db/migrations/0029_event_json.js"
import { measureThroughput, percentile, type Target } from "./load.js"
import { startNode, stopAll, tempDir } from "./processes.js"

/**
 * Tasks/s of sync invokes (16 producers, a scripted model) on one node with the event triggers of 0021
 * (payloads `jsonb`), of 0029 (`json`, the current ones), and disabled, in alternating blocks of one run,
 * nobody following the organization
 * (`node --import tsx bench/support/eventWritesThroughput.ts [rounds]`). bench/events.ts compares on with
 * off only; this separates what 0029 changed from the rest of what events cost (e.g. the usage folder reads
 * task ends from the log, so "off" also spares it that). Prints the median of each round's ratios, and the
 * CPU time the node and its PostgreSQL spent per task (from /proc; a busy machine moves tasks/s far more
 * than it moves CPU per task).
 */
const ROUNDS = Number(process.argv[2]) || 4
const BLOCK_MS = 4000

const TRIGGERS: ReadonlyArray<readonly [string, string]> = [
  ["tasks", "events_tasks_inserted"],
  ["tasks", "events_tasks_updated"],
  ["task_events", "events_task_events_inserted"],
  ["approvals", "events_approvals_inserted"],
  ["approvals", "events_approvals_updated"],
  ["connections", "events_connections_updated"],
  ["audit_events", "events_audit_inserted"]
]

/** CPU time (user + system, ms) of a process and its live descendants. */
const treeCpuMs = (root: number) => {
  const stats = new Map<number, { ppid: number; ms: number }>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const fields = Fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ")
      stats.set(Number(entry), { ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * 10 })
    } catch {
      // gone meanwhile
    }
  }
  const inTree = (pid: number): boolean => pid === root || (pid > 1 && inTree(stats.get(pid)?.ppid ?? 0))
  let total = 0
  for (const [pid, { ms }] of stats) if (inTree(pid)) total += ms
  return total
}

const main = async () => {
  const tmp = tempDir("probe-events-tps-")
  const dataDir = Path.join(tmp, "data")
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    const lines = Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")
    const pool = new pg.Pool({
      host: "127.0.0.1",
      port: Number(lines[3]),
      password: Fs.readFileSync(Path.join(dataDir, "pg-password"), "utf8").trim(),
      user: "postgres",
      database: "postgres",
      max: 2
    })
    try {
      const headers = { "x-api-key": node.apiKey!, "content-type": "application/json" }
      const agent = await (await fetch(`${node.baseUrl}/v1/agents`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "bench", model: { provider: "scripted", script: [{ text: "done" }] } })
      })).json() as { id: string }
      const target: Target = {
        name: "sync invoke",
        url: `${node.baseUrl}/v1/agents/${agent.id}/invoke`,
        method: "POST",
        headers,
        body: JSON.stringify({ input: { text: "hi", user: { id: "u1", email: "u1@example.com" } } })
      }
      const setTriggers = async (enabled: boolean) => {
        for (const [table, trigger] of TRIGGERS) {
          await pool.query(`ALTER TABLE ${table} ${enabled ? "ENABLE" : "DISABLE"} TRIGGER ${trigger}`)
        }
      }
      const modes: Record<string, () => Promise<void>> = {
        off: () => setTriggers(false),
        "0021": async () => {
          await setTriggers(true)
          // its payloads as it wrote them
          await pool.query("ALTER TABLE events ALTER COLUMN data TYPE jsonb USING data::jsonb")
          for (const statement of eventWrites0021) await pool.query(statement)
        },
        "0029": async () => {
          await setTriggers(true)
          for (const statement of eventWrites) await pool.query(statement)
        }
      }
      const names = Object.keys(modes)
      const rps: Record<string, Array<number>> = Object.fromEntries(names.map((n) => [n, []]))
      const cpuPerTask: Record<string, Array<number>> = Object.fromEntries(names.map((n) => [n, []]))
      await measureThroughput(target, { concurrency: 16, warmupMs: 0, durationMs: 4000 })
      for (let round = 0; round < ROUNDS; round++) {
        for (const name of round % 2 === 0 ? names : [...names].reverse()) {
          await modes[name]!()
          const cpuBefore = treeCpuMs(node.pid)
          const result = await measureThroughput(target, { concurrency: 16, warmupMs: 0, durationMs: BLOCK_MS })
          const cpu = (treeCpuMs(node.pid) - cpuBefore) * 1000 / result.requests
          rps[name]!.push(result.rps)
          cpuPerTask[name]!.push(cpu)
          process.stdout.write(
            `  ${name.padEnd(4)} ${result.rps.toFixed(0)} tasks/s, ${
              cpu.toFixed(0)
            } µs CPU per task (${result.errors} errors)\n`
          )
        }
      }
      await modes["0029"]!()
      const median = (xs: ReadonlyArray<number>) => percentile([...xs].sort((a, b) => a - b), 50)
      const ratios = (a: string, b: string) => median(rps[a]!.map((x, i) => x / rps[b]![i]!))
      console.log(
        `0029/off ${ratios("0029", "off").toFixed(3)}x, 0021/off ${ratios("0021", "off").toFixed(3)}x, ` +
          `0029/0021 ${ratios("0029", "0021").toFixed(3)}x (medians of ${ROUNDS} rounds' ratios)`
      )
      console.log(
        `CPU per task (node and PostgreSQL, medians): ${
          names.map((n) => `${n} ${median(cpuPerTask[n]!).toFixed(0)} µs`).join(", ")
        }`
      )
    } finally {
      await pool.end()
      await node.stop()
    }
  } finally {
    await stopAll()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}

await main()
