import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { type Duration, Effect, Schema } from "effect"
import { TaskErrorCode, TaskStatus } from "../schema/Agents.js"

export const TaskOutcome = Schema.Struct({
  status: TaskStatus,
  result: Schema.NullOr(Schema.String),
  // optional on the wire: a node of an earlier release sends none
  error_code: Schema.optionalWith(Schema.NullOr(TaskErrorCode), { default: () => null }),
  finished_at: Schema.NullOr(Schema.Date)
})

/** The outcome part of a task's row (or of any record with its four columns). */
export const outcomeOf = (row: typeof TaskOutcome.Type): typeof TaskOutcome.Type => ({
  status: row.status,
  result: row.result,
  error_code: row.error_code,
  finished_at: row.finished_at
})

/**
 * One entity per task. The durable record of "run this task" is the task's own row, committed with the
 * task itself: `Run` is a plain (not persisted) message, delivered in memory when the task's shard is
 * local. A run lost with its node is started again by the new owner of the shard, which finds the task
 * unfinished in its sweep (src/tasks/TaskRecovery.ts) and replays the recorded steps. `Run` is
 * idempotent: a second `Run` joins the run in progress, and answers with the task's outcome. `Start`
 * starts the run (or finds it) and answers at once: a plain message's sender waits for its answer, even
 * one sent with `discard`, so an async invoke that sent `Run` waited for the whole run. `Cancel`
 * interrupts the run wherever it is.
 */
export const TaskEntity = Entity.make("Task", [
  Rpc.make("Run", {
    payload: { task_id: Schema.String },
    success: TaskOutcome
  })
    // a caller that stops waiting (a closed HTTP connection) must not interrupt the run itself
    .annotate(ClusterSchema.Uninterruptible, "client"),
  Rpc.make("Start", { payload: { task_id: Schema.String } }),
  Rpc.make("Cancel", { success: Schema.Boolean })
])

type TaskClient = Effect.Effect.Success<typeof TaskEntity.client>

/**
 * Hands a task's run to the node that owns its shard and returns once it started there. A node of the
 * previous release does not know `Start` (during a rolling upgrade): it gets `Run`, sent without waiting
 * for its outcome. Bounded by `timeout`, and never fails: the task row is committed, so should the
 * delivery fail, the owner's sweep starts the task.
 */
export const startRun = (client: TaskClient, taskId: string, timeout: Duration.DurationInput) =>
  client(taskId).Start({ task_id: taskId }).pipe(
    Effect.catchAllCause(() => client(taskId).Run({ task_id: taskId }, { discard: true })),
    Effect.timeout(timeout),
    Effect.catchAllCause(() => Effect.void)
  )
