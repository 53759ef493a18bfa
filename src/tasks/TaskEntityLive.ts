import { Entity } from "@effect/cluster"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TaskEntity, type TaskOutcome } from "../../cluster/TaskEntity.js"
import type { TaskId } from "../../schema/Ids.js"
import { LocalTasks } from "./TaskRecovery.js"
import { TaskRunner } from "./TaskRunner.js"

export const TaskEntityLive = TaskEntity.toLayer(
  Effect.gen(function*() {
    const taskId = (yield* Entity.CurrentAddress).entityId as string as TaskId
    const runner = yield* TaskRunner
    const local = yield* LocalTasks
    // the run as every Run message sees it, and inside it the agent loop itself, which Cancel interrupts
    let running: Fiber.RuntimeFiber<typeof TaskOutcome.Type> | undefined
    let loop: Fiber.RuntimeFiber<typeof TaskOutcome.Type, unknown> | undefined
    let cancelling = false

    const runOnce = Effect.gen(function*() {
      local.running.add(taskId)
      const fiber = yield* Effect.fork(runner.run(taskId))
      loop = fiber
      const exit = yield* Fiber.await(fiber)
      loop = undefined
      if (Exit.isSuccess(exit)) return exit.value
      if (cancelling && Cause.isInterruptedOnly(exit.cause)) return yield* runner.cancelled(taskId)
      // the entity itself is going away (its shard moves): the task stays unfinished for the next owner
      if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      yield* Effect.logError("task run failed", exit.cause)
      return yield* runner.failed(taskId, "The task failed inside Switchyard; see the node's logs.")
    }).pipe(
      Effect.ensuring(Effect.sync(() => {
        running = undefined
        local.running.delete(taskId)
      })),
      Effect.orDie
    )

    return {
      // a second Run (a sweep, a retried delivery) joins the run in progress instead of starting another
      Run: () =>
        Effect.suspend(() => {
          if (running !== undefined) return Fiber.join(running)
          return Effect.flatMap(Effect.fork(runOnce), (fiber) => {
            running = fiber
            return Fiber.join(fiber)
          })
        }),
      // Cancel arrives while Run is in flight (the entity runs messages concurrently)
      Cancel: () =>
        Effect.suspend(() => {
          if (loop === undefined) return Effect.succeed(false)
          cancelling = true
          return Effect.as(Fiber.interrupt(loop), true)
        })
    }
  }),
  // a task's entity has nothing to do once its run ended: let it go soon
  { concurrency: "unbounded", maxIdleTime: "5 seconds" }
)
