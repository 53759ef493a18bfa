import * as EntityId from "@effect/cluster/EntityId"
import * as Sharding from "@effect/cluster/Sharding"
import { Duration, Effect, Exit, Fiber } from "effect"
import type { TaskOutcome } from "../../cluster/TaskEntity.js"
import type { TaskId } from "../../schema/Ids.js"
import { Drain } from "../http/Drain.js"
import { periodicWhileBusy } from "../support/Periodic.js"
import { onRunFailure, RUN_FAILED, type RunControl, TaskRunner } from "./TaskRunner.js"

type Outcome = typeof TaskOutcome.Type

interface Run {
  /** The run as every caller sees it (await it for the outcome); a cancel or a time limit interrupts it. */
  fiber: Fiber.RuntimeFiber<Outcome> | undefined
  cancelling: boolean
  /** The run's time limit, once the runner has read the task, and when it is up (epoch ms). */
  limit: Duration.Duration | undefined
  deadline: number
  timedOut: boolean
  /** How the run ended the task when a cancel or its time limit interrupted it. */
  ended: Outcome | undefined
  /** Shared with the run: a run making a tool call is asked to leave rather than interrupted. */
  readonly control: RunControl
}

/** How often runs are checked for shards this node no longer owns and for time limits passed. */
const CHECK = "250 millis"

/**
 * The runs of tasks on this node's shards, one per task at most. The Task entity hands its messages here,
 * and so does an invoke on the node that owns the task's shard, without a trip through the entity's
 * mailbox (it cost about as much as the run itself). Runs are daemon fibers, interrupted when this
 * service's scope closes: a caller that stops waiting leaves the run going. A run whose shard moved to
 * another node is interrupted here, and the new owner's sweep resumes the task from its record. Time
 * limits are kept here too, by the same periodic check: a timer (and a racing fiber) per task cost more
 * than the check. One fiber per run: an interrupted run ends the task itself on its way out (cancelled,
 * or in error past its time limit), and its callers, seeing the interruption, read the task's end. A run
 * making a tool call when its shard moves or the node stops finishes the call and records it first
 * (RunControl); a cancel or the time limit does not wait for it.
 */
export class TaskRuns extends Effect.Service<TaskRuns>()("tasks/TaskRuns", {
  scoped: Effect.gen(function*() {
    const runner = yield* TaskRunner
    const sharding = yield* Sharding.Sharding
    const drain = yield* Drain
    const runs = new Map<string, Run>()
    /** The node is stopping: no run starts, and those under way stop (`stop`). */
    let stopping = false

    const shardIsHere = (taskId: string) => sharding.hasShardId(sharding.getShardId(EntityId.make(taskId), "default"))

    /** A run interrupted by a cancel or at its time limit ends its task; by anything else, it leaves it. */
    const endInterrupted = (taskId: TaskId, run: Run): Effect.Effect<void> => {
      const end: Effect.Effect<Outcome | undefined, unknown> = run.cancelling
        ? runner.cancelled(taskId)
        : run.timedOut
        ? runner.timedOut(taskId, run.limit!)
        : Effect.succeed(undefined)
      return end.pipe(
        Effect.map((ended) => void (run.ended = ended)),
        // should that fail, the sweep resumes the task, and its time limit stops it again
        Effect.catchAllCause((cause) => Effect.logError("ending an interrupted task run failed", cause))
      )
    }

    const runOnce = (taskId: TaskId, run: Run) =>
      runner.run(taskId, run.control).pipe(
        // a defect ends the task in error instead of retrying it forever (the run ends it under its claim once it
        // has one; this before); a failure of the node leaves it
        Effect.catchAllCause((cause) => onRunFailure(cause, run.control, runner.failed(taskId, RUN_FAILED))),
        // a shard move or the node stopping leaves the task unfinished, for the next owner
        Effect.onInterrupt(() => endInterrupted(taskId, run)),
        Effect.ensuring(Effect.sync(() => runs.delete(taskId))),
        Effect.orDie
      )

    /** Starts the task's run here, or finds the one in progress. */
    const start = (taskId: TaskId) =>
      Effect.suspend(() => {
        const running = runs.get(taskId)
        if (running?.fiber !== undefined) return Effect.succeed(running as Run & { fiber: Fiber.RuntimeFiber<Outcome> })
        const run: Run = {
          fiber: undefined,
          cancelling: false,
          limit: undefined,
          deadline: Infinity,
          timedOut: false,
          ended: undefined,
          control: {
            limit: (limit) => {
              run.limit = limit
              run.deadline = Date.now() + Duration.toMillis(limit)
            },
            inCall: false,
            leave: false,
            elsewhere: () => stopping || !shardIsHere(taskId)
          }
        }
        // a stopping node starts nothing: the run is over before it begins, and the task waits for the next owner
        if (stopping) return Effect.map(Effect.forkDaemon(Effect.interrupt), (fiber) => Object.assign(run, { fiber }))
        runs.set(taskId, run)
        checks.wake()
        return Effect.map(Effect.forkDaemon(runOnce(taskId, run)), (fiber) => Object.assign(run, { fiber }))
      })
    /** For a shard move or a shutdown: a run making a tool call is asked to leave once it is recorded (true). */
    const askedToLeave = (control: RunControl) => control.inCall && (control.leave = true)
    /** Stops a run for a shutdown: at once, or once the tool call it makes is recorded. */
    const leave = (control: RunControl, fiber: Fiber.RuntimeFiber<Outcome>) =>
      askedToLeave(control) ? Fiber.await(fiber) : Fiber.interrupt(fiber)
    /**
     * Stops every run (the node is stopping), at once or once its tool call is recorded. Runs first when
     * requests have drained, while the node still holds its shards (Drain), and again as this service
     * closes, for whatever is left.
     */
    const stop = Effect.suspend(() => {
      stopping = true
      return Effect.forEach(
        runs.values(),
        (run) => run.fiber === undefined ? Effect.void : leave(run.control, run.fiber),
        {
          concurrency: "unbounded",
          discard: true
        }
      )
    })
    drain.beforeStop(stop)
    yield* Effect.addFinalizer(() => stop)

    /**
     * Runs (or joins the run of) a task whose shard is on this node, to its outcome. It awaits rather than
     * joins: a join merges the run's fiber refs into the caller's, which costs more than the run.
     */
    const run = (taskId: TaskId) =>
      Effect.flatMap(start(taskId), (run) =>
        Effect.flatMap(Fiber.await(run.fiber), (exit) =>
          // a cancel or the time limit interrupted it, and it ended the task
          Exit.isFailure(exit) && run.ended !== undefined ? Effect.succeed(run.ended) : exit))

    /** Interrupts the task's run if it runs here, which then records the cancel; false when nothing here ran it. */
    const cancel = (taskId: TaskId) =>
      Effect.suspend(() => {
        const running = runs.get(taskId)
        if (running?.fiber === undefined || running.timedOut || running.cancelling) return Effect.succeed(false)
        running.cancelling = true
        return Effect.as(Fiber.interrupt(running.fiber), true)
      })

    /**
     * Runs to stop: those whose shard moved away, and those past their time limit. The interruptions are
     * not awaited: a run interrupted at its time limit ends its task in the database on its way out, and
     * the next check must not wait for that.
     */
    const check = Effect.suspend(() => {
      const now = Date.now()
      const stops: Array<Effect.Effect<unknown>> = []
      for (const [id, run] of runs) {
        if (run.fiber === undefined || run.cancelling || run.timedOut) continue
        if (!shardIsHere(id)) {
          if (!askedToLeave(run.control)) stops.push(Fiber.interruptFork(run.fiber))
        } else if (run.deadline <= now) {
          run.timedOut = true
          stops.push(Fiber.interruptFork(run.fiber))
        }
      }
      return Effect.all(stops, { discard: true })
    })
    const checks = yield* periodicWhileBusy(CHECK, () => runs.size > 0, check)
    yield* Effect.forkScoped(checks.loop)

    /** Whether the task's run is in progress here. */
    const isRunning = (taskId: string) => runs.has(taskId)

    /** Whether the node is stopping: it starts no run, and its sweep looks for none. */
    const isStopping = () => stopping

    return { shardIsHere, isRunning, isStopping, start, run, cancel } as const
  })
}) {}
