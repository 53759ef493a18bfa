import { Effect, Exit, Fiber } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { batched, batchItems } from "../../src/db/PgPool.js"
import { freshDatabase } from "../support/TestDatabase.js"

// `batched` against a real PostgreSQL: what goes together, what stays apart, what fails alone

let pool: pg.Pool
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: await freshDatabase(), max: 8 })
  await pool.query("CREATE TABLE kv (k text PRIMARY KEY, v int NOT NULL CHECK (v >= 0))")
})
afterAll(() => pool?.end())

interface Item {
  readonly k: string
  readonly v: number
  /** Seconds the execution that takes this item sleeps first. */
  readonly sleep?: number
}
interface Row {
  readonly i: number
  readonly k: string
  readonly v: number
  readonly tx: string
}

const put = (name: string, options?: { concurrency?: number; apart?: (item: Item) => string | undefined }) =>
  batched<Item, Row>(
    pool,
    name,
    `WITH req AS (${batchItems("k text, v int, sleep float8")}),
    slept AS (SELECT pg_sleep(coalesce(max(sleep), 0)) FROM req),
    ins AS (INSERT INTO kv (k, v) SELECT k, v FROM req, slept RETURNING k, v)
    SELECT req.i, ins.k, ins.v, txid_current()::text AS tx FROM req JOIN ins ON ins.k = req.k`,
    options
  )

const keysIn = async (prefix: string) =>
  (await pool.query<{ k: string }>("SELECT k FROM kv WHERE k LIKE $1 ORDER BY k", [`${prefix}%`])).rows.map((r) => r.k)

describe("batched statements", () => {
  it("runs the calls of one turn together, and those made while it is in flight together after it", async () => {
    const call = put("kv_together", { concurrency: 1 })
    const rows = await Effect.runPromise(
      Effect.all(Array.from({ length: 30 }, (_, n) => call({ k: `a${n}`, v: n })), { concurrency: "unbounded" })
    )
    rows.forEach((row, n) => expect(row).toMatchObject({ k: `a${n}`, v: n }))
    expect(new Set(rows.map((row) => row!.tx)).size).toBe(1)
    // a slow execution in flight: the calls made meanwhile wait, then go in one execution
    const slow = Effect.runPromise(call({ k: "slow-0", v: 0, sleep: 0.3 }))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const later = Effect.runPromise(
      Effect.all(Array.from({ length: 10 }, (_, n) => call({ k: `slow-${n + 1}`, v: n })), { concurrency: "unbounded" })
    )
    const first = (await slow)!
    const after = await later
    expect(new Set(after.map((row) => row!.tx)).size).toBe(1)
    expect(after[0]!.tx).not.toBe(first.tx)
  })

  it("fails only the call whose item is bad, and writes the others", async () => {
    const call = put("kv_bad", { concurrency: 1 })
    const exits = await Effect.runPromise(
      Effect.all(
        [10, 11, -1, 12, 13].map((v) => Effect.exit(call({ k: `b${v}`, v }))),
        { concurrency: "unbounded" }
      )
    )
    expect(exits.map(Exit.isSuccess)).toEqual([true, true, false, true, true])
    const failure = exits[2]!
    expect(Exit.isFailure(failure) && String(failure.cause)).toMatch(/SqlError/)
    expect(await keysIn("b")).toEqual(["b10", "b11", "b12", "b13"])
  })

  it("fails a call whose item cannot be sent, and goes on with the next", async () => {
    const call = put("kv_unsendable", { concurrency: 1 })
    const unsendable = await Effect.runPromise(Effect.exit(call({ k: "e1", v: 1n as unknown as number })))
    expect(Exit.isFailure(unsendable)).toBe(true)
    expect(await Effect.runPromise(call({ k: "e2", v: 2 }))).toMatchObject({ k: "e2", v: 2 })
    expect(await keysIn("e")).toEqual(["e2"])
  })

  it("never has two items with one `apart` key in flight together", async () => {
    const call = put("kv_apart", { concurrency: 4, apart: (item) => item.k.slice(0, 3) })
    const rows = await Effect.runPromise(
      Effect.all(
        Array.from({ length: 12 }, (_, n) => call({ k: `c${n % 3}_${n}`, v: n, sleep: 0.05 })),
        { concurrency: "unbounded" }
      )
    )
    for (let group = 0; group < 3; group++) {
      const txs = rows.filter((row) => row!.k.startsWith(`c${group}_`)).map((row) => row!.tx)
      expect(new Set(txs).size).toBe(txs.length)
    }
    expect(await keysIn("c")).toHaveLength(12)
  })

  it("withdraws a call interrupted before its execution began", async () => {
    const call = put("kv_withdrawn", { concurrency: 1 })
    const first = Effect.runFork(call({ k: "d1", v: 1, sleep: 0.3 }))
    const queued = Effect.runFork(call({ k: "d2", v: 2 }))
    await Effect.runPromise(Fiber.interrupt(queued))
    expect(await Effect.runPromise(Fiber.join(first))).toMatchObject({ k: "d1" })
    const after = await Effect.runPromise(call({ k: "d3", v: 3 }))
    expect(after).toMatchObject({ k: "d3" })
    expect(await keysIn("d")).toEqual(["d1", "d3"])
  })
})
