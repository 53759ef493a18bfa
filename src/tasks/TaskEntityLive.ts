import { Entity } from "@effect/cluster"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TaskEntity } from "../../cluster/TaskEntity.js"
import type { TaskId } from "../../schema/Ids.js"
import { TaskRunner } from "./TaskRunner.js"

export const TaskEntityLive = TaskEntity.toLayer(
  Effect.gen(function*() {
    const taskId = (yield* Entity.CurrentAddress).entityId as string as TaskId
    const runner = yield* TaskRunner
    let running: Fiber.RuntimeFiber<unknown, unknown> | undefined
    let cancelling = false

    return {
      Run: () =>
        Effect.gen(function*() {
          const fiber = yield* Effect.fork(runner.run(taskId))
          running = fiber
          const exit = yield* Fiber.await(fiber)
          running = undefined
          if (Exit.isSuccess(exit)) return exit.value
          if (cancelling && Cause.isInterruptedOnly(exit.cause)) return yield* runner.cancelled(taskId)
          yield* Effect.logError("task run failed", exit.cause)
          return yield* runner.failed(taskId, "The task failed inside Switchyard; see the node's logs.")
        }).pipe(Effect.orDie),
      // Cancel arrives while Run is in flight (the entity runs messages concurrently)
      Cancel: () =>
        Effect.suspend(() => {
          if (running === undefined) return Effect.succeed(false)
          cancelling = true
          return Effect.as(Fiber.interrupt(running), true)
        })
    }
  }),
  // a task's entity has nothing to do once its run ended: let it go soon
  { concurrency: "unbounded", maxIdleTime: "5 seconds" }
)
