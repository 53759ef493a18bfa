import * as Crypto from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, migrateBelow } from "../support/TestDatabase.js"
import { adminOf, type SeedTask, seedTasks, startUsage, startUsageOn, type UsageWorld } from "./support.js"

const task = (agentId: string, input: number): SeedTask => ({
  agentId,
  userId: "ada",
  source: "api",
  status: "completed",
  createdAt: new Date("2026-02-03T10:00:00Z"),
  durationMs: 1500,
  calls: [{
    provider: "openai",
    model: "gpt-4o",
    input,
    output: 1,
    cached: 0,
    cost: 0.01,
    at: new Date("2026-02-03T10:00:01Z")
  }]
})

const totals = async (world: UsageWorld, org: string) => {
  const { rows } = await world.report(adminOf(org), {
    from: new Date("2026-02-01T00:00:00Z"),
    to: new Date("2026-03-01T00:00:00Z")
  })
  return {
    tasks: rows.reduce((n, r) => n + r.tasks_completed, 0),
    input: rows.reduce((n, r) => n + r.input_tokens, 0),
    calls: rows.reduce((n, r) => n + r.model_calls, 0)
  }
}

const openTransaction = async (databaseUrl: string) => {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  await client.query("BEGIN")
  // takes its transaction id now: later transactions get higher ones
  await client.query("SELECT pg_current_xact_id()")
  return client
}

describe("migration 0022 takes over from 0020's triggers", () => {
  it("usage written before the upgrade, by a transaction older than it, and after it, is counted exactly once", async () => {
    const databaseUrl = await freshDatabase()
    await migrateBelow(databaseUrl, 22)
    const org = Crypto.randomUUID()
    const agent = Crypto.randomUUID()
    // an older transaction, open across the upgrade; it writes usage only after it
    const older = await openTransaction(databaseUrl)
    const db = new pg.Pool({ connectionString: databaseUrl, max: 2 })
    let world: UsageWorld | undefined
    try {
      // written through 0020's triggers (deltas, not folded) by a transaction younger than `older`
      await seedTasks(db, org, [task(agent, 1), task(agent, 10)])
      // the upgrade, `older` still open
      world = await startUsageOn(databaseUrl)
      expect(await totals(world, org)).toEqual({ tasks: 2, input: 11, calls: 2 })
      const { rows: triggers } = await db.query(
        "SELECT tgname FROM pg_trigger WHERE tgname LIKE 'usage%' AND NOT tgisinternal"
      )
      expect(triggers).toEqual([])
      await seedTasks(older, org, [task(agent, 100)])
      await older.query("COMMIT")
      await seedTasks(db, org, [task(agent, 1000)])
      await world.settle()
      expect(await totals(world, org)).toEqual({ tasks: 4, input: 1111, calls: 4 })
      // more rounds change nothing
      await world.fold()
      await world.settle()
      expect(await totals(world, org)).toEqual({ tasks: 4, input: 1111, calls: 4 })
    } finally {
      await older.end().catch(() => undefined)
      await db.end()
      await world?.stop()
    }
  })
})

describe("the fold's positions", () => {
  let world: UsageWorld
  beforeAll(async () => {
    world = await startUsage()
  })
  afterAll(() => world?.stop())

  it("a transaction older than a round, committing after it, is folded once, in a later round", async () => {
    const org = Crypto.randomUUID()
    const agent = Crypto.randomUUID()
    const older = await openTransaction(world.databaseUrl)
    try {
      await seedTasks(older, org, [task(agent, 1)])
      await seedTasks(world.db, org, [task(agent, 10), task(agent, 100)])
      // rounds while `older` runs: the younger rows wait below it, nothing is skipped past them
      for (let i = 0; i < 3; i++) await world.fold()
      await older.query("COMMIT")
      await world.settle()
      expect(await totals(world, org)).toEqual({ tasks: 3, input: 111, calls: 3 })
    } finally {
      await older.end()
    }
  })

  it("a model call outside any task and a connector call are folded by their transaction ids", async () => {
    const org = Crypto.randomUUID()
    const agent = Crypto.randomUUID()
    await world.db.query(
      `INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens, output_tokens,
         cached_tokens, cost_usd, at)
       VALUES (gen_random_uuid(), 1, $1, $2, 'openai', 'gpt-4o', 7, 0, 0, 0, '2026-02-03T10:00:00Z')`,
      [org, agent]
    )
    await world.db.query(
      `INSERT INTO connector_invocations (organization_id, connector_id, connection_id, operation_id, status,
         duration_ms, request_bytes, created_at)
       SELECT $1, gen_random_uuid(), gen_random_uuid(), 'op', s, 5, 0, '2026-02-03T10:00:00Z'
       FROM unnest(ARRAY[200, 302, 404, 503]) s`,
      [org]
    )
    await world.settle()
    const { rows } = await world.report(adminOf(org), {
      from: new Date("2026-02-01T00:00:00Z"),
      to: new Date("2026-03-01T00:00:00Z")
    })
    expect(rows).toEqual([
      expect.objectContaining({
        model_calls: 1,
        input_tokens: 7,
        connector_calls_2xx: 1,
        connector_calls_3xx: 1,
        connector_calls_4xx: 1,
        connector_calls_5xx: 1
      })
    ])
  })
})
