import { Effect, Schedule } from "effect"

/**
 * Counts requests in flight so a stopping node can finish them: on shutdown it stops accepting,
 * turns unready, and waits (up to SWITCHYARD_SHUTDOWN_GRACE) for the count to reach zero.
 */
export class Drain extends Effect.Service<Drain>()("http/Drain", {
  sync: () => {
    let inFlight = 0
    let draining = false
    const listeners = new Set<() => void>()
    return {
      enter: () => {
        inFlight++
        let done = false
        return () => {
          if (!done) inFlight--
          done = true
        }
      },
      // functions, not getters: Effect.Service copies the service's properties, which reads a getter once
      isDraining: () => draining,
      inFlight: () => inFlight,
      /** Calls `f` once when draining begins (an open event stream ends then); the answer unregisters it. */
      onDrain: (f: () => void): () => void => {
        listeners.add(f)
        return () => void listeners.delete(f)
      },
      begin: Effect.sync(() => {
        draining = true
        for (const f of listeners) f()
        listeners.clear()
      }),
      idle: Effect.suspend(() => inFlight === 0 ? Effect.void : Effect.fail("busy" as const)).pipe(
        Effect.retry(Schedule.spaced("20 millis"))
      )
    }
  }
}) {}
