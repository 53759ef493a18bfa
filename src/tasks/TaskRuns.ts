import * as EntityId from "@effect/cluster/EntityId"
import * as Sharding from "@effect/cluster/Sharding"
import { Cause, Duration, Effect, Exit, Fiber, Schedule } from "effect"
import type { TaskOutcome } from "../../cluster/TaskEntity.js"
import type { TaskId } from "../../schema/Ids.js"
import { TaskRunner } from "./TaskRunner.js"

type Outcome = typeof TaskOutcome.Type

interface Run {
  /** The run as every caller sees it (await it for the outcome). */
  readonly fiber: Fiber.RuntimeFiber<Outcome>
  /** The agent loop inside it, which a cancel interrupts. */
  loop: Fiber.RuntimeFiber<Outcome, unknown> | undefined
  cancelling: boolean
  /** The run's time limit, once the runner has read the task, and when it is up (epoch ms). */
  limit: Duration.Duration | undefined
  deadline: number
  timedOut: boolean
}

/** How often runs are checked for shards this node no longer owns and for time limits passed. */
const CHECK = "250 millis"

/**
 * The runs of tasks on this node's shards, one per task at most. The Task entity hands its messages here,
 * and so does an invoke on the node that owns the task's shard, without a trip through the entity's
 * mailbox (it cost about as much as the run itself). Runs live in this service's scope, not in the
 * caller's: a caller that stops waiting leaves the run going. A run whose shard moved to another node is
 * interrupted here, and the new owner's sweep resumes the task from its record. Time limits are kept here
 * too, by the same periodic check: a timer (and a racing fiber) per task cost more than the check.
 */
export class TaskRuns extends Effect.Service<TaskRuns>()("tasks/TaskRuns", {
  scoped: Effect.gen(function*() {
    const runner = yield* TaskRunner
    const sharding = yield* Sharding.Sharding
    const scope = yield* Effect.scope
    const runs = new Map<string, Run>()

    const shardIsHere = (taskId: string) => sharding.hasShardId(sharding.getShardId(EntityId.make(taskId), "default"))

    const runOnce = (taskId: TaskId, self: () => Run) =>
      Effect.gen(function*() {
        const loop = yield* Effect.fork(runner.run(taskId, (limit) => {
          self().limit = limit
          self().deadline = Date.now() + Duration.toMillis(limit)
        }))
        self().loop = loop
        const exit = yield* Fiber.await(loop)
        self().loop = undefined
        if (Exit.isSuccess(exit)) return exit.value
        if (self().cancelling && Cause.isInterruptedOnly(exit.cause)) return yield* runner.cancelled(taskId)
        if (self().timedOut && Cause.isInterruptedOnly(exit.cause)) return yield* runner.timedOut(taskId, self().limit!)
        // the node is stopping or the shard moved: the task stays unfinished for the next owner
        if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
        yield* Effect.logError("task run failed", exit.cause)
        return yield* runner.failed(taskId, "The task failed inside Switchyard; see the node's logs.")
      }).pipe(
        Effect.ensuring(Effect.sync(() => runs.delete(taskId))),
        Effect.orDie
      )

    /** Starts the task's run here, or finds the one in progress; join the fiber for its outcome. */
    const start = (taskId: TaskId) =>
      Effect.suspend(() => {
        const running = runs.get(taskId)
        if (running !== undefined) return Effect.succeed(running.fiber)
        let run: Run | undefined
        return Effect.map(Effect.forkIn(runOnce(taskId, () => run!), scope), (fiber) => {
          run = { fiber, loop: undefined, cancelling: false, limit: undefined, deadline: Infinity, timedOut: false }
          runs.set(taskId, run)
          return fiber
        })
      })

    /**
     * Runs (or joins the run of) a task whose shard is on this node, to its outcome. It awaits rather than
     * joins: a join merges the run's fiber refs into the caller's, which costs more than the run.
     */
    const run = (taskId: TaskId) => Effect.flatMap(start(taskId), (fiber) => Effect.flatten(Fiber.await(fiber)))

    /** Interrupts the task's agent loop if it runs here; false when nothing here ran it. */
    const cancel = (taskId: TaskId) =>
      Effect.suspend(() => {
        const running = runs.get(taskId)
        if (running?.loop === undefined || running.timedOut) return Effect.succeed(false)
        running.cancelling = true
        return Effect.as(Fiber.interrupt(running.loop), true)
      })

    /** Runs to stop: those whose shard moved away (all of it), and those past their time limit (the loop). */
    const check = Effect.suspend(() => {
      const now = Date.now()
      const stops: Array<Effect.Effect<unknown>> = []
      for (const [id, run] of runs) {
        if (!shardIsHere(id)) stops.push(Fiber.interrupt(run.fiber))
        else if (run.deadline <= now && run.loop !== undefined && !run.cancelling && !run.timedOut) {
          run.timedOut = true
          stops.push(Fiber.interrupt(run.loop))
        }
      }
      return Effect.all(stops, { discard: true, concurrency: "unbounded" })
    })
    yield* check.pipe(Effect.repeat(Schedule.spaced(CHECK)), Effect.forkScoped)

    /** Whether the task's run is in progress here. */
    const isRunning = (taskId: string) => runs.has(taskId)

    return { shardIsHere, isRunning, start, run, cancel } as const
  })
}) {}
