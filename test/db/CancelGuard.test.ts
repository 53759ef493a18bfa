import { Reactivity } from "@effect/experimental"
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Exit, Fiber, Layer, Option } from "effect"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { closeCancelledConnections } from "../../src/db/CancelGuard.js"
import { freshDatabase } from "../support/TestDatabase.js"

/**
 * The late cancel of @effect/sql-pg, made to happen: a pool of two, one connection held, so the cancel of an
 * interrupted statement waits for a free connection; meanwhile the statement ends by itself, and its
 * connection goes to the caller queued next. When the held connection comes back, the cancel runs on it and
 * signals the backend that now runs that caller's statement.
 */
const lateCancel = async (guarded: boolean) => {
  const raw = new pg.Pool({ connectionString: await freshDatabase(), max: 2 })
  const pool = guarded ? closeCancelledConnections(raw) : raw
  const held = await pool.connect()
  try {
    return await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* PgClient.PgClient
        const interrupted = yield* Effect.fork(sql`SELECT pg_sleep(4)`)
        yield* Effect.sleep("300 millis")
        // queued first: it gets the interrupted statement's connection once that is released
        const next = yield* Effect.fork(sql`SELECT pg_sleep(2) AS slept`)
        yield* Effect.sleep("200 millis")
        const interrupting = yield* Effect.fork(Fiber.interrupt(interrupted))
        // the interrupted statement ends by itself at 4 s and its connection goes to `next`; the held one comes
        // back after that: the cancel, queued since the interrupt, runs on it then, while `next` sleeps
        yield* Effect.sleep("4300 millis")
        held.release()
        yield* Fiber.join(interrupting)
        return yield* Fiber.await(next)
      }).pipe(
        Effect.provide(
          Layer.scoped(PgClient.PgClient, PgClient.fromPool({ acquire: Effect.succeed(pool) })).pipe(
            Layer.provide(Reactivity.layer)
          )
        )
      )
    )
  } finally {
    await pool.end().catch(() => undefined)
  }
}

describe("an interrupted statement's cancel (src/db/CancelGuard.ts)", () => {
  it("reaches no statement of another caller: the interrupted connection is closed, not reused", async () => {
    const exit = await lateCancel(true)
    expect(Exit.isSuccess(exit), String(exit)).toBe(true)
  }, 30_000)

  it("without the guard, it cancels the next caller's statement (what the guard is for)", async () => {
    const exit = await lateCancel(false)
    const failure = Exit.isFailure(exit) ? Cause.failureOption(exit.cause) : Option.none()
    expect(Option.isSome(failure)).toBe(true)
    expect(String((Option.getOrThrow(failure) as { cause?: Error }).cause?.message))
      .toBe("canceling statement due to user request")
  }, 30_000)
})
