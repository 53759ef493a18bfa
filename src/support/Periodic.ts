import { type Duration, Effect } from "effect"

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
