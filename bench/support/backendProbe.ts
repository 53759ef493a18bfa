import * as Fs from "node:fs"
import * as Path from "node:path"
import pg from "pg"
import { postgresOf, startNode, stopAll, tempDir } from "./processes.js"

/** What a probe of the database's cost gets: one backend of a fresh node's PostgreSQL, and an agent to write for. */
export interface BackendProbe {
  readonly client: pg.Client
  readonly organizationId: string
  readonly agentId: string
  /** The backend's user + system CPU time so far, in ms (clock ticks of 10 ms). */
  readonly cpuMs: () => number
}

/**
 * Starts a node (its migrations make the schema), makes a scripted agent, connects one backend, runs `f`
 * with it, and throws everything away after. For probes that measure what statements cost the backend
 * (/proc/<pid>/stat), which a busy machine disturbs far less than the wall clock.
 */
export const withBackendProbe = async (prefix: string, f: (probe: BackendProbe) => Promise<void>) => {
  const tmp = tempDir(prefix)
  const dataDir = Path.join(tmp, "data")
  try {
    const node = await startNode({
      dataDir,
      logLevel: "warning",
      logFile: Path.join(tmp, "node.log"),
      expectApiKey: true
    })
    const headers = { "x-api-key": node.apiKey!, "content-type": "application/json" }
    const me = await (await fetch(`${node.baseUrl}/v1/me`, { headers })).json() as any
    const agent = await (await fetch(`${node.baseUrl}/v1/agents`, {
      method: "POST",
      headers,
      body: JSON.stringify({ name: "probe", model: { provider: "scripted", script: [{ text: "done" }] } })
    })).json() as { id: string }
    const { password, port } = postgresOf(dataDir)
    const client = new pg.Client({ port, password, host: "127.0.0.1", user: "postgres", database: "postgres" })
    await client.connect()
    // the node's stop ends this connection: not an error of the probe
    client.on("error", () => undefined)
    try {
      const { rows: [{ pid }] } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")
      const cpuMs = () => {
        const fields = Fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
        return (Number(fields[11]) + Number(fields[12])) * 10
      }
      await f({ client, organizationId: me.organization_id ?? me.organization?.id, agentId: agent.id, cpuMs })
    } finally {
      await client.end()
      await node.stop()
    }
  } finally {
    await stopAll()
    Fs.rmSync(tmp, { recursive: true, force: true })
  }
}

/**
 * Runs `run` under each variant in turn (its statements applied first), `rounds` times in alternating order
 * after a first round that warms caches and is not counted, and prints each variant's median backend CPU per
 * unit (`units` per run) and its difference to the first variant's.
 */
export const compareVariants = async (
  { client, cpuMs }: BackendProbe,
  options: {
    readonly variants: Readonly<Record<string, ReadonlyArray<string>>>
    /** Statements run before each variant's (setting every variant's starting point). */
    readonly reset: ReadonlyArray<string>
    readonly run: () => Promise<unknown>
    readonly units: number
    readonly rounds: number
  }
) => {
  const names = Object.keys(options.variants)
  const perUnit: Record<string, Array<number>> = Object.fromEntries(names.map((k) => [k, []]))
  for (let round = 0; round <= options.rounds; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      for (const statement of [...options.reset, ...options.variants[name]!]) await client.query(statement)
      const before = cpuMs()
      await options.run()
      if (round > 0) perUnit[name]!.push(((cpuMs() - before) * 1000) / options.units)
    }
  }
  const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const first = median(perUnit[names[0]!]!)
  for (const name of names) {
    const m = median(perUnit[name]!)
    console.log(
      `${name.padEnd(5)} ${m.toFixed(0).padStart(5)} µs CPU per task` +
        (name === names[0] ? "" : `, ${(m - first).toFixed(0)} µs over ${names[0]}`) +
        `  (rounds: ${perUnit[name]!.map((x) => x.toFixed(0)).join(", ")})`
    )
  }
}
