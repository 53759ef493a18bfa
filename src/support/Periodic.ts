import { Duration, Effect } from "effect"

/**
 * `step` every `interval` while `busy()` holds, and no timer while it does not: asleep until `wake()`, which the
 * owner calls after adding work. An idle node's runtime is then woken only by what it has to do (a check four
 * times a second over an empty map still woke it, and each wake of a fiber costs an idle node more than the check).
 */
export const periodicWhileBusy = <E, R>(
  interval: Duration.DurationInput,
  busy: () => boolean,
  step: Effect.Effect<unknown, E, R>
) =>
  Effect.map(Effect.makeLatch(false), (work) => ({
    loop: Effect.gen(function*() {
      if (!busy()) {
        work.unsafeClose()
        // work added between the check and the close opened the latch before it was closed: look again
        if (!busy()) yield* work.await
      }
      yield* Effect.sleep(interval)
      yield* step
    }).pipe(Effect.forever),
    wake: () => void work.unsafeOpen()
  }))

/**
 * `step` forever, each run after a wait drawn once per node between half and one and a half `interval`: the
 * upkeep every node does (retention, expired rows), each step safe with any number of nodes running it at once;
 * the draw spreads the nodes' runs apart. `firstWithin`: the first run comes at a random moment within it
 * instead, for upkeep rare enough that a node restarted more often than `interval` would otherwise never do it.
 * A failed run is logged as `what` and the next one tries again.
 */
export const everyJittered = <E, R>(
  interval: Duration.Duration,
  what: string,
  step: Effect.Effect<unknown, E, R>,
  firstWithin?: Duration.Duration
) => {
  const period = Duration.millis(Duration.toMillis(interval) * (0.5 + Math.random()))
  const first = firstWithin === undefined ? period : Duration.millis(Duration.toMillis(firstWithin) * Math.random())
  const run = step.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`${what} failed`, cause)))
  return Effect.sleep(first).pipe(
    Effect.zipRight(run),
    Effect.zipRight(Effect.forever(Effect.zipRight(Effect.sleep(period), run)))
  )
}
