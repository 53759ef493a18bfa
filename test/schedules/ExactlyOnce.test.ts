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
    `SELECT k.schedule_id, k.scheduled_for, k.task_id, k.kind, k.created_at,
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

/**
 * An every-second schedule's ticks, oldest first, miss none but as the catch-up rule says
 * (docs/guides/schedules.md): each follows the one before by a second, unless the scheduler was more than 30 s
 * behind (load can starve it that long, the database too): then one `catchup` tick, for the latest second due,
 * stands for the seconds missed. Told by the tick's `created_at`, the claim's clock, which made it (or later).
 */
const expectNoneMissed = (
  ticks: ReadonlyArray<{ scheduled_for: Date; kind: string; created_at: Date }>,
  firstDue?: Date
) => {
  expect(ticks.length).toBeGreaterThan(0)
  for (let i = firstDue === undefined ? 1 : 0; i < ticks.length; i++) {
    const previous = i === 0 ? firstDue!.getTime() - 1000 : ticks[i - 1]!.scheduled_for.getTime()
    const tick = ticks[i]!
    if (tick.scheduled_for.getTime() - previous === 1000) {
      expect(tick.kind, tick.scheduled_for.toISOString()).toBe("scheduled")
    } else {
      expect(tick.kind, `${tick.scheduled_for.toISOString()} after a gap`).toBe("catchup")
      // the first second missed was over 30 s late when the tick was decided
      expect(tick.created_at.getTime() - (previous + 1000), tick.scheduled_for.toISOString()).toBeGreaterThan(30_000)
    }
  }
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
    // made at once: independent requests, and the more of them due in the same second the better
    const schedules = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      createSchedule(first, org.api_key, {
        name: `s${i}`,
        agent_id: agentId,
        cron: "* * * * * *",
        overlap: "allow"
      })))
    await until("every schedule to make 3 runs", async () => {
      const [{ n }] = await query(
        first.databaseUrl,
        "SELECT count(*)::int AS n FROM (SELECT 1 FROM schedule_ticks GROUP BY schedule_id HAVING count(*) >= 3) x"
      )
      return n === schedules.length ? true : undefined
    }, 120_000)
    await Promise.all(schedules.map((s) => call(second, org.api_key, "POST", `/v1/schedules/${s.id}/pause`)))
    await until("the last runs to be made", async () => {
      const [{ n }] = await query(
        first.databaseUrl,
        "SELECT count(*)::int AS n FROM schedule_ticks WHERE status = 'pending'"
      )
      return n === 0 ? true : undefined
    }, 60_000)
    const ticks = await expectExactlyOnce(first.databaseUrl)
    // every second between a schedule's first and last tick was made: none was lost between the nodes
    for (const s of schedules) {
      const mine = ticks.filter((t) => t.schedule_id === s.id)
        .sort((a, b) => a.scheduled_for.getTime() - b.scheduled_for.getTime())
      expect(mine.length).toBeGreaterThanOrEqual(3)
      expectNoneMissed(mine)
    }
    // room for two node starts and 40 requests on a loaded CI machine: no timing is asserted
  }, 180_000)
})

describe("a scheduler behind by seconds", () => {
  let node: TestNode | undefined
  afterAll(() => node?.stop())

  it("makes every tick it is behind on, on time, once", async () => {
    // its own database: the invariant is checked over every tick and task there
    const sy = await startTestNode()
    node = sy
    const org = await sy.bootstrap()
    const agentId = await createScriptedAgent(sy, org.api_key)
    // made yearly (no tick before the change below), then left 5 s behind on an every-second cron: as a node
    // held up by load (CPU, a slow database) leaves it
    const s = await createSchedule(sy, org.api_key, {
      name: "behind",
      agent_id: agentId,
      cron: "0 0 1 1 *",
      overlap: "allow"
    })
    const [{ behind }] = await query(
      sy.databaseUrl,
      `UPDATE schedules SET cron = '* * * * * *', next_tick = date_trunc('second', now()) - interval '5 seconds',
        next_run_at = date_trunc('second', now()) - interval '5 seconds' WHERE id = $1 RETURNING next_tick AS behind`,
      [s.id]
    )
    await until("the schedule to be caught up", async () => {
      const [{ n }] = await query(
        sy.databaseUrl,
        "SELECT count(*)::int AS n FROM schedule_ticks WHERE schedule_id = $1 AND scheduled_for >= $2",
        [s.id, new Date(behind.getTime() + 6000)]
      )
      return n > 0 ? true : undefined
    }, 90_000)
    expect((await call(sy, org.api_key, "POST", `/v1/schedules/${s.id}/pause`)).status).toBe(200)
    await until("the last runs to be made", async () => {
      const [{ n }] = await query(
        sy.databaseUrl,
        "SELECT count(*)::int AS n FROM schedule_ticks WHERE status = 'pending'"
      )
      return n === 0 ? true : undefined
    }, 60_000)
    await expectExactlyOnce(sy.databaseUrl)
    const mine = await query(
      sy.databaseUrl,
      "SELECT scheduled_for, kind, created_at FROM schedule_ticks WHERE schedule_id = $1 ORDER BY scheduled_for",
      [s.id]
    )
    // from the one 5 s back, every second was made on time (a node behind by seconds made only the latest,
    // as a catch-up); only should the scheduler be starved past 30 s more does the catch-up rule apply
    expectNoneMissed(mine, behind)
  }, 180_000)
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
    // made (and paused, below) at once: independent requests, ~0.3 s each through the proxy one by one
    const schedules = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      createSchedule(via as TestNode, apiKey, {
        name: `k${i}`,
        agent_id: agentId,
        cron: "* * * * * *",
        overlap: "allow"
      })))
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
    const paused = await Promise.all(schedules.map((s) => via.fetch(`/v1/schedules/${s.id}/pause`, { method: "POST" })))
    for (const r of paused) expect(r.status).toBe(200)
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
