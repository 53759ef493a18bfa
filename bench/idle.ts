import pg from "pg"
import { cpuTimeMs, postgresOf, startNode, stopAll, tempDir } from "./support/processes.js"
import { fmt } from "./support/report.js"
import { appendToList, median } from "./support/runs.js"

/**
 * What a node costs when nobody uses it: one node with the default settings (log level info, every
 * background loop on: the cluster's heartbeats and shard locks, the task sweep, the scheduler, webhook and
 * ingestion queues, the usage folder), no requests. After a warm-up, in windows of `windowMs`: the node
 * process's CPU (ms a second), its embedded PostgreSQL's (every backend), and the commits a second in its
 * database (each background poll is a transaction of its own). There is no same-run baseline to divide by:
 * compare two commits by running this bench in a worktree of each (`git worktree add`), one after the other.
 * Each run is appended to bench/results/idle.json.
 */
export const name = "idle"

const settings = { warmupMs: 15_000, windowMs: 10_000, windows: 3 } as const

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const run = async () => {
  const dataDir = tempDir("idle")
  const node = await startNode({ dataDir, logLevel: "info", logFile: `${dataDir}/node.log`, expectApiKey: true })
  const postgres = postgresOf(dataDir)
  const db = new pg.Client({ ...postgres, user: "postgres", database: "postgres" })
  await db.connect()
  try {
    // the node's database is `postgres`; this read is a commit too, counted out below
    const commits = async () =>
      Number(
        (await db.query("SELECT xact_commit::float8 AS n FROM pg_stat_database WHERE datname = 'postgres'")).rows[0].n
      )
    await sleep(settings.warmupMs)
    const windows: Array<{ nodeMsPerS: number; postgresMsPerS: number; commitsPerS: number }> = []
    for (let i = 0; i < settings.windows; i++) {
      // backends report their commits about once a second: over a window of seconds, near enough
      const [node0, all0, commits0, t0] = [
        cpuTimeMs([node.pid], { descendants: false })!,
        cpuTimeMs([node.pid])!,
        await commits(),
        performance.now()
      ]
      await sleep(settings.windowMs)
      const [node1, all1, commits1, t1] = [
        cpuTimeMs([node.pid], { descendants: false })!,
        cpuTimeMs([node.pid])!,
        await commits(),
        performance.now()
      ]
      const seconds = (t1 - t0) / 1000
      windows.push({
        nodeMsPerS: (node1 - node0) / seconds,
        postgresMsPerS: (all1 - all0 - (node1 - node0)) / seconds,
        commitsPerS: (commits1 - commits0 - 1) / seconds
      })
      const w = windows[windows.length - 1]!
      console.log(
        `window ${i + 1}: node ${fmt(w.nodeMsPerS, 1)} ms/s, PostgreSQL ${fmt(w.postgresMsPerS, 1)} ms/s, ` +
          `${fmt(w.commitsPerS, 1)} commits/s`
      )
    }
    const result = {
      nodeMsPerS: median(windows.map((w) => w.nodeMsPerS)),
      postgresMsPerS: median(windows.map((w) => w.postgresMsPerS)),
      commitsPerS: median(windows.map((w) => w.commitsPerS))
    }
    console.log(
      `\nidle node, median of ${settings.windows} windows: node ${fmt(result.nodeMsPerS, 1)} ms of CPU a second ` +
        `(${fmt(result.nodeMsPerS / 10, 2)}% of a core), PostgreSQL ${fmt(result.postgresMsPerS, 1)} ms/s, ` +
        `${fmt(result.commitsPerS, 1)} commits/s`
    )
    appendToList(name, settings, { ...result, windows })
    return { ok: true }
  } finally {
    await db.end()
    await stopAll()
  }
}
