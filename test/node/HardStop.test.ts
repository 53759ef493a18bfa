import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as EmbeddedPostgres from "../../src/db/EmbeddedPostgres.js"
import { type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { freePort } from "../support/ports.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-hardstop-"))
Fs.chmodSync(dataDir, 0o711)
let node: NodeProcess | undefined
let frozen: Array<number> = []
const scope = Effect.runSync(Scope.make())
const signal = (pids: ReadonlyArray<number>, s: NodeJS.Signals) => {
  for (const pid of pids) {
    try {
      process.kill(pid, s)
    } catch {
      // gone already
    }
  }
}
afterAll(async () => {
  signal(frozen, "SIGCONT")
  await node?.stop("SIGKILL")
  await Effect.runPromise(Scope.close(scope, Exit.void))
  Fs.rmSync(dataDir, { recursive: true, force: true })
})

/** The PostgreSQL server and every process it started (its backends), found by their parent in /proc. */
const serverProcesses = () => {
  const postmaster = Number.parseInt(Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8"), 10)
  const children = Fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      // the parent pid is the field after the parenthesised command name
      const stat = Fs.readFileSync(`/proc/${d}/stat`, "utf8")
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === postmaster ? [Number(d)] : []
    } catch {
      return []
    }
  })
  return [postmaster, ...children]
}

describe("a stop that cannot finish", () => {
  it(
    "exits with 1 once the grace and the hard stop have passed, when shutdown waits on a database that stopped answering",
    async () => {
      const pg = await Effect.runPromise(
        EmbeddedPostgres.make({ dataDir, port: await freePort(), settings: { fsync: "off" } }).pipe(Scope.extend(scope))
      )
      node = spawnNode({
        DATABASE_URL: Redacted.value(pg.url),
        SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
        SWITCHYARD_HTTP_PORT: String(await freePort()),
        SWITCHYARD_RUNNER_PORT: String(await freePort()),
        SWITCHYARD_RUNNER_HOST: "127.0.0.1",
        SWITCHYARD_BOOTSTRAP_ON_FIRST_START: "false",
        SWITCHYARD_SHUTDOWN_GRACE: "1 second",
        SWITCHYARD_SHUTDOWN_HARD_STOP: "1 second"
      })
      await node.waitReady()
      // the database stops answering without closing its connections: a shutdown step waiting on it never ends
      frozen = serverProcesses()
      signal(frozen, "SIGSTOP")
      const stoppedAt = Date.now()
      const code = await node.stop("SIGTERM")
      const took = Date.now() - stoppedAt
      expect(code).toBe(1)
      expect(took).toBeGreaterThanOrEqual(2_000)
      expect(node.output()).toContain("shutdown did not finish within 2000 ms")
    },
    120_000
  )
})
