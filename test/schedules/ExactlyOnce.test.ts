import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { call } from "../access/support.js"
import { type Cluster, startCluster } from "../support/ClusterHarness.js"
import { runCli } from "../support/NodeProcess.js"
import { startTestNode, testEnvironment, type TestNode } from "../support/TestNode.js"
import { createSchedule, createScriptedAgent, until } from "./support.js"

const query = async (databaseUrl: string, text: string, values: Array<unknown> = []) => {
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  try {
    return (await db.query(text, values)).rows
  } finally {
    await db.end()
  }
}

/**
 * The invariant: every tick decided was made into exactly one task, and every scheduled task is one tick's.
 * The tasks are counted by their schedule and their key, so a second task for a tick would show.
 */
const expectExactlyOnce = async (databaseUrl: string) => {
  const open = await query(databaseUrl, "SELECT count(*)::int AS n FROM schedule_ticks WHERE status <> 'fired'")
  expect(open[0].n).toBe(0)
  const perTick = await query(
    databaseUrl,
    `SELECT k.schedule_id, k.scheduled_for, k.task_id,
      (SELECT count(*)::int FROM tasks t WHERE t.schedule_id = k.schedule_id
        AND t.idempotency_key = 'schedule ' || k.schedule_id || ' ' ||
          to_char(k.scheduled_for AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) AS tasks
    FROM schedule_ticks k`
  )
  expect(perTick.length).toBeGreaterThan(0)
  expect(perTick.filter((t) => t.tasks !== 1 || t.task_id === null)).toEqual([])
  const [{ tasks }] = await query(databaseUrl, "SELECT count(*)::int AS tasks FROM tasks WHERE source = 'schedule'")
  expect(tasks).toBe(perTick.length)
  return perTick
}

describe("exactly one task per tick, cluster-wide", () => {
  let nodes: Array<TestNode> = []
  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop()))
  })

  it("two nodes claiming the same due schedules at once make each tick once, and miss none", async () => {
    const first = await startTestNode()
    const second = await startTestNode({ DATABASE_URL: first.databaseUrl })
    nodes = [first, second]
    const org = await first.bootstrap()
    const agentId = await createScriptedAgent(first, org.api_key)
    const schedules = []
    for (let i = 0; i < 20; i++) {
      schedules.push(
        await createSchedule(first, org.api_key, {
          name: `s${i}`,
          agent_id: agentId,
          cron: "* * * * * *",
          overlap: "allow"
        })
      )
    }
    await new Promise((r) => setTimeout(r, 4000))
    for (const s of schedules) await call(second, org.api_key, "POST", `/v1/schedules/${s.id}/pause`)
    await until("the last runs to be made", async () => {
      const [{ n }] = await query(
        first.databaseUrl,
        "SELECT count(*)::int AS n FROM schedule_ticks WHERE status = 'pending'"
      )
      return n === 0 ? true : undefined
    })
    const ticks = await expectExactlyOnce(first.databaseUrl)
    // every second between a schedule's first and last tick was made: none was lost between the nodes
    for (const s of schedules) {
      const mine = ticks.map((t) => t).filter((t) => t.schedule_id === s.id).map((t) => t.scheduled_for.getTime())
        .sort((a, b) => a - b)
      expect(mine.length).toBeGreaterThanOrEqual(3)
      expect(mine.at(-1)! - mine[0]!).toBe((mine.length - 1) * 1000)
    }
  }, 60_000)
})

describe("exactly one task per tick through SIGKILL", () => {
  let cluster: Cluster | undefined
  afterAll(() => cluster?.stop())

  it("a node killed at the moment of firing: each tick is made once, and every run made goes to its end", async () => {
    const env = await testEnvironment({ SWITCHYARD_SCHEDULE_STALE_TICK: "2 seconds" })
    cluster = await startCluster({ nodes: 2, env })
    const { api_key: apiKey } = JSON.parse(
      (await runCli(["bootstrap", "--org", "Ticks", "--email", "t@o.test", "--json"], env)).stdout
    )
    const via = {
      fetch: (path: string, init: RequestInit & { apiKey?: string } = {}) =>
        fetch(cluster!.url + path, { ...init, headers: { ...init.headers as any, "x-api-key": init.apiKey ?? apiKey } })
    }
    const agentId = await createScriptedAgent(via as TestNode, apiKey)
    const schedules = []
    for (let i = 0; i < 30; i++) {
      schedules.push(
        await createSchedule(via as TestNode, apiKey, {
          name: `k${i}`,
          agent_id: agentId,
          cron: "* * * * * *",
          overlap: "allow"
        })
      )
    }
    // three times: kill node 0 just after a second's ticks fall due, while it claims them, inserts their
    // tasks or hands them to their runs (each tick and its task commit together, or neither does)
    const kills: Array<number> = []
    for (const offsetMs of [3, 15, 40]) {
      await new Promise((r) => setTimeout(r, 1500))
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + offsetMs))
      kills.push(Date.now())
      await cluster.kill(0)
      await cluster.restart(0)
    }
    await new Promise((r) => setTimeout(r, 1500))
    for (const s of schedules) {
      const r = await via.fetch(`/v1/schedules/${s.id}/pause`, { method: "POST" })
      expect(r.status).toBe(200)
    }
    // ticks the bulk path left to the invoke path and a killed node left pending are made once stale
    await until("no tick left pending", async () => {
      const [{ n }] = await query(
        env.DATABASE_URL,
        "SELECT count(*)::int AS n FROM schedule_ticks WHERE status = 'pending'"
      )
      return n === 0 ? true : undefined
    }, 30_000)
    const ticks = await expectExactlyOnce(env.DATABASE_URL)
    // the schedules fired through each kill: the other node took them on
    for (const at of kills) {
      expect(ticks.filter((t) => t.scheduled_for.getTime() > at && t.scheduled_for.getTime() <= at + 3000).length)
        .toBeGreaterThan(0)
    }
    // a task committed by the killed node before its run started is started by its shard's sweep
    await until("every scheduled run ended", async () => {
      const [{ n }] = await query(
        env.DATABASE_URL,
        "SELECT count(*)::int AS n FROM tasks WHERE source = 'schedule' AND finished_at IS NULL"
      )
      return n === 0 ? true : undefined
    }, 60_000)
  }, 240_000)
})
