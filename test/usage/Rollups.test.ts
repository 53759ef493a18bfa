import { FastCheck as fc } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bucketOf, quantile } from "../../src/usage/DurationHistogram.js"
import { adminOf, memberOf, type SeedTask, seedTasks, startUsage, type UsageWorld } from "./support.js"

let world: UsageWorld
beforeAll(async () => {
  world = await startUsage()
})
afterAll(() => world?.stop())

const MODELS = [["openai", "gpt-4o"], ["openai", "gpt-4o-mini"], ["anthropic", "claude-sonnet"]] as const
const BASE = Date.UTC(2026, 0, 30, 20) // the last two days of January and the first of February, around midnights

const taskArbitrary = (agents: ReadonlyArray<string>, users: ReadonlyArray<string>) =>
  fc.record({
    agentId: fc.constantFrom(...agents),
    userId: fc.constantFrom(...users),
    source: fc.constantFrom("api" as const, "mcp" as const, "schedule" as const),
    status: fc.constantFrom("completed" as const, "error" as const, "cancelled" as const),
    createdAt: fc.integer({ min: 0, max: 72 * 3_600_000 }).map((ms) => new Date(BASE + ms)),
    durationMs: fc.integer({ min: 0, max: 120_000 }),
    calls: fc.array(
      fc.record({
        model: fc.constantFrom(...MODELS),
        input: fc.integer({ min: 0, max: 50_000 }),
        output: fc.integer({ min: 0, max: 5_000 }),
        cached: fc.integer({ min: 0, max: 10_000 }),
        cost: fc.integer({ min: 0, max: 10_000_000 }).map((n) => n / 1e8),
        offsetMs: fc.integer({ min: 0, max: 3 * 3_600_000 })
      }),
      { maxLength: 4 }
    )
  }).map((t): SeedTask => ({
    ...t,
    calls: t.calls.map((c) => ({
      provider: c.model[0],
      model: c.model[1],
      input: c.input,
      output: c.output,
      cached: c.cached,
      cost: c.cost,
      at: new Date(t.createdAt.getTime() + c.offsetMs)
    }))
  }))

const sum = <A>(xs: ReadonlyArray<A>, f: (a: A) => number) => xs.reduce((n, x) => n + f(x), 0)

describe("usage rollups, folded from the event log, llm_usage and connector_invocations", () => {
  it(
    "usage totals equal the sum of llm_usage over the same tasks, whatever the tasks, users, models and folds",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }).chain((agentCount) =>
            fc.integer({ min: 1, max: 4 }).chain((userCount) => {
              const agents = Array.from({ length: agentCount }, () => Crypto.randomUUID())
              const users = Array.from({ length: userCount }, (_, i) => `user-${i}`)
              return fc.tuple(
                fc.constant(agents),
                fc.array(fc.array(taskArbitrary(agents, users), { minLength: 1, maxLength: 12 }), {
                  minLength: 1,
                  maxLength: 4
                }),
                // after which batch to fold the deltas into the rollups (the rest stay deltas)
                fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
                fc.constantFrom("hour" as const, "day" as const, "month" as const),
                fc.subarray(["agent", "user", "model", "provider", "source"] as const)
              )
            })
          ),
          async ([, batches, folds, bucket, groupBy]) => {
            const org = Crypto.randomUUID()
            const taskIds: Array<string> = []
            for (const [i, batch] of batches.entries()) {
              taskIds.push(...await seedTasks(world.db, org, batch))
              if (folds[i]) await world.fold()
            }
            await world.settle()
            const report = await world.report(adminOf(org), {
              from: new Date(BASE - 86_400_000),
              to: new Date(BASE + 5 * 86_400_000),
              bucket,
              group_by: groupBy.join(",")
            })
            const { rows: [truth] } = await world.db.query(
              `SELECT count(*)::int AS calls, coalesce(sum(input_tokens), 0)::int AS input,
               coalesce(sum(output_tokens), 0)::int AS output, coalesce(sum(cached_tokens), 0)::int AS cached,
               coalesce(sum(cost_usd), 0)::float8 AS cost
             FROM llm_usage WHERE task_id = ANY($1::uuid[])`,
              [taskIds]
            )
            const all = batches.flat()
            expect({
              calls: sum(report.rows, (r) => r.model_calls),
              input: sum(report.rows, (r) => r.input_tokens),
              output: sum(report.rows, (r) => r.output_tokens),
              cached: sum(report.rows, (r) => r.cached_tokens),
              tasks: sum(report.rows, (r) => r.tasks_completed + r.tasks_error + r.tasks_cancelled),
              completed: sum(report.rows, (r) => r.tasks_completed)
            }).toEqual({
              calls: truth.calls,
              input: truth.input,
              output: truth.output,
              cached: truth.cached,
              tasks: all.length,
              completed: all.filter((t) => t.status === "completed").length
            })
            expect(sum(report.rows, (r) => r.cost_usd)).toBeCloseTo(truth.cost, 6)
            // per model and per user, when grouped so
            if (groupBy.includes("model")) {
              for (const [, model] of MODELS) {
                const calls = all.flatMap((t) => t.calls).filter((c) => c.model === model)
                expect(sum(report.rows.filter((r) => r.model === model), (r) => r.input_tokens)).toBe(
                  sum(calls, (c) => c.input)
                )
              }
            }
            if (groupBy.includes("user")) {
              for (const user of new Set(all.map((t) => t.userId))) {
                const mine = all.filter((t) => t.userId === user)
                expect(sum(report.rows.filter((r) => r.user_id === user), (r) => r.output_tokens)).toBe(
                  sum(mine.flatMap((t) => t.calls), (c) => c.output)
                )
                // a Member sees exactly the usage recorded under them
                const own = await world.report(memberOf(org, user), {
                  from: new Date(BASE - 86_400_000),
                  to: new Date(BASE + 5 * 86_400_000),
                  bucket
                })
                expect(sum(own.rows, (r) => r.tasks_completed + r.tasks_error + r.tasks_cancelled)).toBe(mine.length)
              }
            }
            // one row per bucket and group: no key twice
            const keys = report.rows.map((r) =>
              JSON.stringify([r.bucket_start, r.agent_id, r.user_id, r.model, r.provider, r.source])
            )
            expect(new Set(keys).size).toBe(keys.length)
          }
        ),
        { numRuns: 25, seed: 24 }
      )
    },
    120_000
  )

  it("a round is due exactly while a task end, a model call or a connector call waits to be folded", async () => {
    const organizationId = Crypto.randomUUID()
    await world.settle()
    expect(await world.due()).toBe(false)
    await seedTasks(world.db, organizationId, [{
      agentId: Crypto.randomUUID(),
      userId: "user-0",
      source: "api",
      status: "completed",
      createdAt: new Date(BASE),
      durationMs: 1000,
      calls: [{ provider: "openai", model: "gpt-4o", input: 10, output: 5, cached: 0, cost: 0.001, at: new Date(BASE) }]
    }])
    expect(await world.due()).toBe(true)
    await world.settle()
    expect(await world.due()).toBe(false)
    await world.db.query(
      `INSERT INTO connector_invocations (organization_id, connector_id, connection_id, operation_id, user_id,
         task_id, status, duration_ms, request_bytes)
       VALUES ($1, $2, $3, 'listPets', $4, NULL, 200, 12, 0)`,
      [organizationId, Crypto.randomUUID(), Crypto.randomUUID(), Crypto.randomUUID()]
    )
    expect(await world.due()).toBe(true)
    await world.settle()
    expect(await world.due()).toBe(false)
  })

  it("buckets are UTC hours, days and calendar months: a record at 23:59:59.999 and one at midnight part", async () => {
    const org = Crypto.randomUUID()
    const agent = Crypto.randomUUID()
    const call = (at: string, input: number) => ({
      provider: "openai",
      model: "gpt-4o",
      input,
      output: 0,
      cached: 0,
      cost: 0,
      at: new Date(at)
    })
    await seedTasks(world.db, org, [{
      agentId: agent,
      userId: "u",
      source: "api",
      status: "completed",
      createdAt: new Date("2026-01-31T23:00:00Z"),
      durationMs: 1000,
      calls: [
        call("2026-01-31T22:59:59.999Z", 1),
        call("2026-01-31T23:59:59.999Z", 10),
        call("2026-02-01T00:00:00.000Z", 100),
        call("2026-02-01T00:30:00.000Z", 1000)
      ]
    }])
    await world.settle()
    const range = { from: new Date("2026-01-01T00:00:00Z"), to: new Date("2026-03-01T00:00:00Z") }
    const by = async (bucket: "hour" | "day" | "month") =>
      (await world.report(adminOf(org), { ...range, bucket })).rows.map((r) => [
        r.bucket_start.toISOString(),
        r.input_tokens
      ])
    expect(await by("hour")).toEqual([
      ["2026-01-31T22:00:00.000Z", 1],
      ["2026-01-31T23:00:00.000Z", 10],
      ["2026-02-01T00:00:00.000Z", 1100]
    ])
    expect(await by("day")).toEqual([["2026-01-31T00:00:00.000Z", 11], ["2026-02-01T00:00:00.000Z", 1100]])
    expect(await by("month")).toEqual([["2026-01-01T00:00:00.000Z", 11], ["2026-02-01T00:00:00.000Z", 1100]])
    // folded again (nothing new), the same
    await world.fold()
    expect(await by("day")).toEqual([["2026-01-31T00:00:00.000Z", 11], ["2026-02-01T00:00:00.000Z", 1100]])
    // `from` is rounded down to its bucket; a bucket is in when it starts before `to`
    const narrow = await world.report(adminOf(org), {
      from: new Date("2026-01-31T23:30:00Z"),
      to: new Date("2026-02-01T00:00:00.001Z"),
      bucket: "hour"
    })
    expect(narrow.from.toISOString()).toBe("2026-01-31T23:00:00.000Z")
    expect(narrow.rows.map((r) => r.input_tokens)).toEqual([10, 1100])
    // so a month bucket starting before `to` is the whole month, not the days before `to` (kept by day)
    const month = await world.report(adminOf(org), {
      from: new Date("2026-01-01T00:00:00Z"),
      to: new Date("2026-01-15T00:00:00Z"),
      bucket: "month"
    })
    expect(month.rows.map((r) => [r.bucket_start.toISOString(), r.input_tokens])).toEqual([
      ["2026-01-01T00:00:00.000Z", 11]
    ])
  })

  it("duration percentiles from the merged histograms are within 19% of the exact ones", async () => {
    const org = Crypto.randomUUID()
    const agent = Crypto.randomUUID()
    const durations = Array.from({ length: 400 }, (_, i) => Math.round(50 * 1.02 ** i))
    const half = durations.length / 2
    const task = (durationMs: number): SeedTask => ({
      agentId: agent,
      userId: "u",
      source: "api",
      status: "completed",
      createdAt: new Date("2026-03-10T10:00:00Z"),
      durationMs,
      calls: []
    })
    // half folded in one round, half in another: the histograms merge
    await seedTasks(world.db, org, durations.slice(0, half).map(task))
    await world.settle()
    await seedTasks(world.db, org, durations.slice(half).map(task))
    await world.settle()
    const [row] = (await world.report(adminOf(org), {
      from: new Date("2026-03-10T00:00:00Z"),
      to: new Date("2026-03-11T00:00:00Z")
    })).rows
    const sorted = [...durations].sort((a, b) => a - b)
    const exact = (q: number) => sorted[Math.ceil(q * sorted.length) - 1]!
    expect(row!.tasks_completed).toBe(400)
    expect(Math.abs(row!.task_duration_p50_ms! / exact(0.5) - 1)).toBeLessThan(0.19)
    expect(Math.abs(row!.task_duration_p95_ms! / exact(0.95) - 1)).toBeLessThan(0.19)
  })

  it("the SQL and TypeScript bucket rules agree, and a percentile is its bucket's geometric midpoint", async () => {
    const samples = [0, 5, 9.99, 10, 14.13, 14.15, 20, 999, 1000, 60_000, 3_600_000, 90_000_000, 1e12]
    const { rows } = await world.db.query(
      "SELECT ms, usage_duration_bucket(ms) AS b FROM unnest($1::float8[]) AS ms",
      [samples]
    )
    expect(rows.map((r) => r.b)).toEqual(samples.map(bucketOf))
    const histogram = new Array(48).fill(0)
    histogram[bucketOf(1000) - 1] = 1
    expect(Math.abs(quantile(histogram, 0.5)! / 1000 - 1)).toBeLessThan(0.19)
    expect(quantile(new Array(48).fill(0), 0.5)).toBeNull()
  })
})
