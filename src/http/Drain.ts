import { Effect, Schedule } from "effect"

/**
 * Counts requests in flight so a stopping node can finish them: on shutdown it stops accepting,
 * turns unready, and waits (up to SWITCHYARD_SHUTDOWN_GRACE) for the count to reach zero. Then it runs
 * what other parts asked to do before the node lets anything go (`beforeStop`): task runs finish the tool
 * calls they are making while the node still holds their shards.
 */
export class Drain extends Effect.Service<Drain>()("http/Drain", {
  sync: () => {
    let inFlight = 0
    let draining = false
    const listeners = new Set<() => void>()
    const stops: Array<Effect.Effect<void>> = []
    return {
      enter: () => {
        inFlight++
        let done = false
        return () => {
          if (!done) inFlight--
          done = true
        }
      },
      /** `enter` for a caller that ensures it leaves once (a fast path's exchange, from its close listener). */
      arrive: () => void inFlight++,
      leave: () => void inFlight--,
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
      ),
      /** Registers what to do once requests have drained, before the node's parts stop. */
      beforeStop: (stop: Effect.Effect<void>): void => void stops.push(stop),
      /** What `beforeStop` registered, together. */
      stopping: Effect.suspend(() => Effect.all(stops, { concurrency: "unbounded", discard: true }))
    }
  }
}) {}
