import { Entity } from "@effect/cluster"
import { Effect } from "effect"
import { TaskEntity } from "../../cluster/TaskEntity.js"
import type { TaskId } from "../../schema/Ids.js"
import { TaskRuns } from "./TaskRuns.js"

/** The entity delivers; the run itself lives in TaskRuns, where a local invoke starts it directly. */
export const TaskEntityLive = TaskEntity.toLayer(
  Effect.gen(function*() {
    const taskId = (yield* Entity.CurrentAddress).entityId as string as TaskId
    const runs = yield* TaskRuns
    return {
      // a second Run (a sweep, a retried delivery) joins the run in progress instead of starting another
      Run: () => runs.run(taskId),
      Start: () => Effect.asVoid(runs.start(taskId)),
      // Cancel arrives while Run is in flight (the entity runs messages concurrently)
      Cancel: () => runs.cancel(taskId)
    }
  }),
  // a task's entity has nothing to do once its run ended: let it go soon
  { concurrency: "unbounded", maxIdleTime: "5 seconds" }
)
