import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { API_KEY, type NodeProcess, spawnNode } from "../support/NodeProcess.js"
import { eventually } from "../support/Poll.js"
import { freePort } from "../support/ports.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "switchyard-embedded-"))
afterAll(() => Fs.rmSync(dataDir, { recursive: true, force: true }))

const embeddedEnv = async () => ({
  SWITCHYARD_DATA_DIR: dataDir,
  SWITCHYARD_HTTP_PORT: String(await freePort()),
  SWITCHYARD_RUNNER_PORT: String(await freePort()),
  DATABASE_URL: "",
  SWITCHYARD_SECRET_KEY: ""
})

const postgresPid = () => Number(Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0])
/** Running, not merely a zombie (an orphan reparented to a PID 1 that does not reap stays one). */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(Fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

// one scenario in order: each step starts from what the previous one left on disk
describe.sequential("embedded PostgreSQL node", () => {
  let apiKey = ""

  it("first start: initialises the data dir, bootstraps, prints the key and URLs once", async () => {
    const node = spawnNode(await embeddedEnv())
    try {
      await node.waitReady(120_000)
      // the banner may follow readiness by a moment: until it is all there
      const out = await eventually(
        () => (/\/mcp\//.test(node.output()) && API_KEY.test(node.output()) ? node.output() : undefined),
        5_000,
        "the banner"
      ).catch(() => node.output())
      apiKey = API_KEY.exec(out)![0]
      expect(out).toContain("/docs")
      expect(out).toContain("/mcp/")
      expect(Fs.existsSync(Path.join(dataDir, "secret.key"))).toBe(true)
      expect(Fs.statSync(Path.join(dataDir, "secret.key")).mode & 0o077).toBe(0)
      const me = await fetch(`${node.baseUrl}/v1/me`, { headers: { "x-api-key": apiKey } })
      expect((await me.json()).role).toBe("super_admin")
    } finally {
      expect(await node.stop()).toBe(0)
    }
    expect(Fs.existsSync(Path.join(dataDir, "node.lock"))).toBe(false)
  })

  // the restarted node is the one the next step's second node finds running (a node start less)
  let restarted: NodeProcess | undefined
  afterAll(async () => {
    await restarted?.stop()
  })

  it("restart: keeps the data and does not bootstrap again", async () => {
    restarted = spawnNode(await embeddedEnv())
    await restarted.waitReady()
    expect(restarted.output()).not.toMatch(API_KEY)
    const me = await fetch(`${restarted.baseUrl}/v1/me`, { headers: { "x-api-key": apiKey } })
    expect(me.status).toBe(200)
  })

  it("refuses a second node on the same data dir with a clear error", async () => {
    const first = restarted!
    try {
      const second = spawnNode(await embeddedEnv())
      expect(await second.exited).not.toBe(0)
      expect(second.output()).toContain("already running on the data directory")
      expect((await fetch(`${first.baseUrl}/healthz`)).status).toBe(200)
    } finally {
      await first.stop()
    }
  })

  // the node started after the SIGKILL is the one the last step stops with SIGTERM (a node start less)
  let afterKill: NodeProcess | undefined
  afterAll(async () => {
    await afterKill?.stop()
  })

  it("after a SIGKILL: stops the orphaned PostgreSQL and starts again", async () => {
    const killed = spawnNode(await embeddedEnv())
    await killed.waitReady()
    const orphan = postgresPid()
    await killed.stop("SIGKILL")
    expect(alive(orphan)).toBe(true)
    afterKill = spawnNode({ ...(await embeddedEnv()), SWITCHYARD_LOG_LEVEL: "info" })
    await afterKill.waitReady()
    expect(alive(orphan)).toBe(false)
    const me = await fetch(`${afterKill.baseUrl}/v1/me`, { headers: { "x-api-key": apiKey } })
    expect(me.status).toBe(200)
  })

  it("on SIGTERM: drains, exits 0 and stops its PostgreSQL", async () => {
    const node = afterKill!
    const pg = postgresPid()
    expect(await node.stop("SIGTERM")).toBe(0)
    expect(alive(pg)).toBe(false)
    // its last line says it stopped, after everything closed (a log reader tells it from a killed node)
    const lines = node.output().trim().split("\n")
    expect(lines[lines.length - 1]).toMatch(/stopped \(shutdown took \d+\.\d s\)/)
  })
})
