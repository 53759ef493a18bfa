import { Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { singleFlight } from "../../src/support/SingleFlight.js"

/** A single flight whose runs are forked into the test's scope, as the Connection entity forks its loads. */
const scoped = <A>(
  f: (flights: ReturnType<typeof singleFlight<string, number, string>>) => Effect.Effect<A, unknown>
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(
        Effect.scope,
        (scope) => f(singleFlight<string, number, string>((run) => Effect.forkIn(run, scope)))
      )
    )
  )

describe("singleFlight (the credentials asks and loads)", () => {
  it("runs once for the callers that come meanwhile, and the caller that began it may leave", () =>
    scoped((flights) =>
      Effect.gen(function*() {
        let runs = 0
        const gate = yield* Deferred.make<void>()
        const work = Effect.zipRight(Effect.sync(() => runs++), Effect.as(Deferred.await(gate), 42))
        const first = yield* Effect.fork(flights.run("k", work))
        yield* Effect.yieldNow()
        const second = yield* Effect.fork(flights.run("k", work))
        yield* Effect.yieldNow()
        expect(flights.running("k")).toBe(true)
        yield* Fiber.interrupt(first)
        yield* Deferred.succeed(gate, undefined)
        expect(yield* Fiber.join(second)).toBe(42)
        expect(runs).toBe(1)
        // over: the next caller starts another
        expect(flights.running("k")).toBe(false)
        expect(yield* flights.run("k", Effect.succeed(7))).toBe(7)
      })
    ))

  it("lets a run's own timeout fire, shares its failure, and after forget starts anew", () =>
    scoped((flights) =>
      Effect.gen(function*() {
        const late = yield* Effect.exit(
          flights.run("t", Effect.timeoutFail(Effect.never, { duration: "10 millis", onTimeout: () => "late" }))
        )
        expect(late).toEqual(Exit.fail("late"))

        const gate = yield* Deferred.make<void>()
        const old = yield* Effect.fork(flights.run("f", Effect.as(Deferred.await(gate), 1)))
        yield* Effect.yieldNow()
        flights.forget("f")
        expect(yield* flights.run("f", Effect.succeed(2))).toBe(2)
        yield* Deferred.succeed(gate, undefined)
        expect(yield* Fiber.join(old)).toBe(1)
        // the forgotten run, ending, leaves the newer one's key alone
        yield* flights.settled("f")
        expect(flights.running("f")).toBe(false)
      })
    ))
})
