import { Duration, Effect, Either, Layer, Schedule } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { ClaimedSchedule, Decisions, TickKind, TickStatus } from "./ScheduleRepo.js"
import { ScheduleRepo } from "./ScheduleRepo.js"
import { timingOf } from "./ScheduleRules.js"
import { ScheduleRuns } from "./ScheduleRuns.js"
import { dueTick, jitterOf } from "./ScheduleTiming.js"

/** How soon a schedule with a run waiting (`buffer_one`) is looked at again, to start it once the previous ends. */
export const BUFFER_RECHECK_MS = 1000

/** Stale ticks taken per sweep, at most. */
const STALE_BATCH = 200

/**
 * What to do with the schedules claimed at `now`, with `now` the database's clock: for each, the tick to make
 * (the latest due, within the catch-up window), whether it runs, waits (`buffer_one`) or is skipped (the
 * previous run still going), a waiting run to start now that the previous one ended, and when to look again.
 */
export const decide = (claimed: ReadonlyArray<ClaimedSchedule>, now: Date): Decisions => {
  const ticks: Array<Decisions["ticks"][number]> = []
  const promoted: Array<Decisions["promoted"][number]> = []
  const moves: Array<Decisions["moves"][number]> = []
  for (const s of claimed) {
    let running = s.running
    let buffered = s.buffered_for
    if (buffered !== null && !running) {
      promoted.push({ schedule_id: s.id, scheduled_for: buffered })
      buffered = null
      running = true
    }
    const timing = timingOf(s, s.created_at)
    let next = Either.isRight(timing) ? s.next_tick : null
    const runAt = next === null ? null : next.getTime() + jitterOf(s.id, next, s.jitter_ms)
    if (Either.isRight(timing) && next !== null && runAt !== null && runAt <= now.getTime() && s.enabled) {
      const due = dueTick(timing.right, next, now, s.catchup_window_ms)
      if (due.fire !== undefined) {
        const kind: TickKind = due.late ? "catchup" : "scheduled"
        let status: TickStatus
        if (s.overlap === "allow" || !running) {
          status = "pending"
          running = true
        } else if (s.overlap === "buffer_one" && buffered === null) {
          status = "buffered"
          buffered = due.fire
        } else {
          status = "skipped"
        }
        ticks.push({ schedule_id: s.id, scheduled_for: due.fire, kind, status })
      }
      next = due.following ?? null
    }
    let nextRunAt = next === null ? null : next.getTime() + jitterOf(s.id, next, s.jitter_ms)
    if (buffered !== null) nextRunAt = Math.min(nextRunAt ?? Infinity, now.getTime() + BUFFER_RECHECK_MS)
    moves.push({ id: s.id, next_tick: next, next_run_at: nextRunAt === null ? null : new Date(nextRunAt) })
  }
  return { ticks, promoted, moves }
}

/**
 * Every node runs the scheduler: each poll it claims the due schedules no other node holds (their indexed
 * `next_run_at`, `FOR UPDATE SKIP LOCKED`), decides and commits their ticks, then makes the ticks into tasks.
 * A full batch is followed by the next claim at once. Another loop makes the ticks a node left pending (it
 * died between the two commits). SWITCHYARD_SCHEDULER=false turns both off on this node.
 */
export const SchedulerLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const repo = yield* ScheduleRepo
    const runs = yield* ScheduleRuns
    const { claimBatch, enabled, pollInterval, staleAfter } = config.scheduler
    if (!enabled) return
    // runs of one claim are made while the next claim is decided, a few claims' worth at a time
    const making = yield* Effect.makeSemaphore(4)
    const scope = yield* Effect.scope

    const claimOnce = Effect.gen(function*() {
      const { claimed, open } = yield* repo.claim(claimBatch, decide)
      if (open.length > 0) {
        yield* making.take(1)
        yield* runs.run(open).pipe(Effect.ensuring(making.release(1)), Effect.forkIn(scope))
      }
      return claimed
    })
    const claimLoop = claimOnce.pipe(
      Effect.repeat({ while: (claimed) => claimed >= claimBatch }),
      Effect.catchAllCause((cause) => Effect.logWarning("schedule claim failed; trying again", cause)),
      Effect.repeat(Schedule.spaced(pollInterval))
    )
    const sweep = repo.stale(Duration.toMillis(staleAfter), STALE_BATCH).pipe(
      Effect.flatMap((ticks) => ticks.length === 0 ? Effect.void : runs.run(ticks)),
      Effect.catchAllCause((cause) => Effect.logWarning("stale schedule ticks: sweep failed; trying again", cause)),
      Effect.repeat(Schedule.spaced(Duration.millis(Math.max(500, Duration.toMillis(staleAfter) / 2))))
    )
    yield* Effect.forkScoped(claimLoop)
    yield* Effect.forkScoped(sweep)
  })
)
