import { Entity } from "@effect/cluster"
import { Effect } from "effect"
import { outcomeOf, TaskEntity } from "../../cluster/TaskEntity.js"
import type { TaskId } from "../../schema/Ids.js"
import { TaskCompletions } from "./TaskCompletions.js"
import { TaskRepo } from "./TaskRepo.js"
import { TaskRuns } from "./TaskRuns.js"

const TERMINAL = new Set(["completed", "error", "cancelled"])

/** The entity delivers; the run itself lives in TaskRuns, where a local invoke starts it directly. */
export const TaskEntityLive = TaskEntity.toLayer(
  Effect.gen(function*() {
    const taskId = (yield* Entity.CurrentAddress).entityId as string as TaskId
    const runs = yield* TaskRuns
    const completions = yield* TaskCompletions
    const repo = yield* TaskRepo
    return {
      // a second Run (a sweep, a retried delivery) joins the run in progress instead of starting another
      Run: () => runs.run(taskId),
      Start: () => Effect.asVoid(runs.start(taskId)),
      // Cancel arrives while Run is in flight (the entity runs messages concurrently). The cancel is
      // committed by then, on the node that took it: readers waiting here (on a task this node runs, so
      // not registered with it for a notification) learn its end
      Cancel: () =>
        Effect.tap(runs.cancel(taskId), () =>
          completions.watched(taskId)
            ? Effect.flatMap(repo.findState(taskId), (task) =>
              Effect.sync(() => {
                if (task !== undefined && TERMINAL.has(task.status)) completions.ended(taskId, outcomeOf(task))
              })).pipe(Effect.orDie)
            : Effect.void)
    }
  }),
  // a task's entity has nothing to do once its run ended: let it go soon
  { concurrency: "unbounded", maxIdleTime: "5 seconds" }
)
