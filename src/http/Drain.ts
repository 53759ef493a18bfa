import { Effect, Schedule } from "effect"

/**
 * Counts requests in flight so a stopping node can finish them: on shutdown it stops accepting,
 * turns unready, and waits (up to SWITCHYARD_SHUTDOWN_GRACE) for the count to reach zero.
 */
export class Drain extends Effect.Service<Drain>()("http/Drain", {
  sync: () => {
    let inFlight = 0
    let draining = false
    return {
      enter: () => {
        inFlight++
        let done = false
        return () => {
          if (!done) inFlight--
          done = true
        }
      },
      get draining() {
        return draining
      },
      get inFlight() {
        return inFlight
      },
      begin: Effect.sync(() => {
        draining = true
      }),
      idle: Effect.suspend(() => inFlight === 0 ? Effect.void : Effect.fail("busy" as const)).pipe(
        Effect.retry(Schedule.spaced("20 millis"))
      )
    }
  }
}) {}
