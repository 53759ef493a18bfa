import { Duration, Effect, Either, Layer, Schedule } from "effect"
import type { TaskId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { ClaimedForBulk, ClaimedSchedule, Decisions, Plan, TickKind, TickStatus } from "./ScheduleRepo.js"
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
  // a claim is mostly schedules of a few timings due at the same tick: each timing is parsed, and each
  // (timing, tick, window) stepped, once per claim (stepping a zone's cron costs ~60 µs; 10,000 made it 0.6 s)
  const timings = new Map<string, ReturnType<typeof timingOf>>()
  const dues = new Map<string, ReturnType<typeof dueTick>>()
  for (const s of claimed) {
    const timingKey = `${s.cron}\n${s.every_ms}\n${s.timezone}\n${s.start_at?.getTime()}\n${s.end_at?.getTime()}\n${
      s.cron === null ? s.created_at.getTime() : ""
    }`
    let timing = timings.get(timingKey)
    if (timing === undefined) {
      timing = timingOf(s, s.created_at)
      timings.set(timingKey, timing)
    }
    let running = s.running
    let buffered = s.buffered_for
    if (buffered !== null && !running) {
      promoted.push({ schedule_id: s.id, scheduled_for: buffered })
      buffered = null
      running = true
    }
    let next = Either.isRight(timing) ? s.next_tick : null
    const jitter = next === null ? 0 : jitterOf(s.id, next, s.jitter_ms)
    const runAt = next === null ? null : next.getTime() + jitter
    if (Either.isRight(timing) && next !== null && runAt !== null && runAt <= now.getTime() && s.enabled) {
      const dueKey = `${timingKey}\n${next.getTime()}\n${s.catchup_window_ms}\n${jitter}`
      let due = dues.get(dueKey)
      if (due === undefined) {
        // lateness counts from the run's instant (its tick plus its jitter), not from the tick: a run the
        // jitter delayed past the catch-up window (or past 30 s, with `0s`) is on time, not missed
        due = dueTick(timing.right, next, new Date(now.getTime() - jitter), s.catchup_window_ms)
        dues.set(dueKey, due)
      }
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

/** How long the runs of a burst's first tasks wait, at most, for the burst's claims to be done. */
const HANDOFF_WAIT_MS = 1000

/** Claims a node makes at once: each takes other rows (`SKIP LOCKED`), so a burst's statements overlap. */
const CLAIMERS = 2

/**
 * Every node runs the scheduler: each poll it claims the due schedules no other node holds (their indexed
 * `next_run_at`, `FOR UPDATE SKIP LOCKED`), decides their ticks and makes them into tasks in the same
 * transaction, in bulk (`ScheduleRepo.claim`); the runs are started after the commit, once the node's claims
 * of the burst are done (a pending task older than a second is started by its shard's sweep anyway). A full batch is followed by the next claim at once. Ticks the bulk path leaves (an agent with a
 * budget, a creator who lost the right) go through `ScheduleRuns.run`, one invoke each; another loop makes
 * the ticks a node left pending (it died before making them). SWITCHYARD_SCHEDULER=false turns both off.
 */
export const SchedulerLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const repo = yield* ScheduleRepo
    const runs = yield* ScheduleRuns
    const { claimBatch, enabled, pollInterval, staleAfter } = config.scheduler
    if (!enabled) return
    // ticks left to the invoke path are made while the next claim is decided, a few claims' worth at a time
    const making = yield* Effect.makeSemaphore(4)
    const scope = yield* Effect.scope

    const plan = (claimed: ReadonlyArray<ClaimedForBulk>, now: Date): Plan => {
      const decisions = decide(claimed, now)
      const opened = [
        ...decisions.ticks,
        ...decisions.promoted.map((p) => ({ ...p, status: "pending" as const }))
      ]
      return { ...decisions, tasks: runs.tickTasks(claimed, opened) }
    }

    // the runs of a burst's tasks start once the node finds nothing more due that it can take (or
    // HANDOFF_WAIT_MS after the first was committed): while claims go on, runs would take the cores and the
    // database from the inserts (started when one claimer ran dry, they held up the other's commit; when
    // both had, the rows one had skipped, locked by the other, waited behind thousands of run starts)
    let waiting: Array<TaskId> = []
    let waitingSince = 0
    const handOff = (ids: ReadonlyArray<TaskId>, drained: boolean) =>
      Effect.suspend(() => {
        if (waiting.length === 0) waitingSince = Date.now()
        for (const id of ids) waiting.push(id)
        if (waiting.length === 0 || (!drained && Date.now() - waitingSince < HANDOFF_WAIT_MS)) return Effect.void
        const batch = waiting
        waiting = []
        return Effect.asVoid(Effect.forkIn(runs.start(batch), scope))
      })

    const claimOnce = Effect.gen(function*() {
      const { claimed, open, started } = yield* repo.claim(claimBatch, plan)
      yield* handOff(started, false)
      if (open.length > 0) {
        yield* making.take(1)
        yield* runs.run(open).pipe(Effect.ensuring(making.release(1)), Effect.forkIn(scope))
      }
      return claimed
    })
    const pollMs = Duration.toMillis(pollInterval)
    const burst = claimOnce.pipe(Effect.repeat({ while: (claimed) => claimed >= claimBatch }))
    // one cheap read a poll while nothing is due (an idle node made a claim transaction per claimer each
    // poll: ~40 statements a second); when something is, the claimers take it together and look again at once.
    // Asleep until the next schedule is due (a burst is claimed from its first millisecond), at most a poll
    // interval (schedules made on other nodes meanwhile; one made or changed on this node wakes it at once);
    // rows due but held by another node's claim are that claim's, so they wait a poll interval too
    const claimLoop = Effect.gen(function*() {
      yield* repo.armWake
      const dueIn = yield* repo.nextDueIn
      if (dueIn !== null && dueIn <= 0) {
        const claimed = yield* Effect.all(Array.from({ length: CLAIMERS }, () => burst), { concurrency: CLAIMERS })
        if (claimed.some((n) => n > 0)) return
      }
      // nothing left due that this node could take: the burst's runs start
      yield* handOff([], true)
      yield* repo.sleepUnlessWoken(dueIn !== null && dueIn > 0 ? Math.min(dueIn + 1, pollMs) : pollMs)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.zipRight(Effect.logWarning("schedule claim failed; trying again", cause), Effect.sleep(pollMs))
      ),
      Effect.forever
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
