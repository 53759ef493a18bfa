import { Deferred, Effect, type Exit, type Fiber, FiberId } from "effect"

/**
 * One run at a time per key, shared by the callers that come while it runs. The run is forked (`fork`: into
 * the owner's scope, or as a daemon), so a caller that stops waiting (interrupted, timed out) leaves it going
 * for the others: a slow token endpoint is not cut short by one impatient caller, and the next one joins it.
 */
export const singleFlight = <K, A, E>(
  fork: (run: Effect.Effect<void>) => Effect.Effect<Fiber.RuntimeFiber<void>>
) => {
  const under = new Map<K, Deferred.Deferred<A, E>>()

  /** Joins the key's run under way, or starts `effect` as it. */
  const run = (key: K, effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.suspend(() => {
        const joined = under.get(key)
        if (joined !== undefined) return restore(Deferred.await(joined))
        const done = Deferred.unsafeMake<A, E>(FiberId.none)
        under.set(key, done)
        const settle = (exit: Exit.Exit<A, E>) =>
          Effect.suspend(() => {
            if (under.get(key) === done) under.delete(key)
            return Deferred.done(done, exit)
          })
        // the run itself interruptible: its own timeouts must be able to fire
        return Effect.zipRight(
          fork(Effect.asVoid(Effect.flatMap(Effect.exit(Effect.interruptible(effect)), settle))),
          restore(Deferred.await(done))
        )
      })
    )

  /** Waits for the key's run under way, if any, whatever its outcome. */
  const settled = (key: K): Effect.Effect<void> =>
    Effect.suspend(() => {
      const joined = under.get(key)
      return joined === undefined ? Effect.void : Effect.asVoid(Effect.exit(Deferred.await(joined)))
    })

  /**
   * Forgets the key's run under way: callers from now on start another, and the one under way settles only the
   * callers that joined it. (What it yields may be older than an edit made meanwhile.)
   */
  const forget = (key: K) => void under.delete(key)

  /** Whether the key's run is under way. */
  const running = (key: K) => under.has(key)

  return { run, settled, forget, running } as const
}
