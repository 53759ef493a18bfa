import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { TaskStatus } from "../schema/Agents.js"

export const TaskOutcome = Schema.Struct({
  status: TaskStatus,
  result: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.Date)
})

/** The outcome part of a task's row (or of any record with its three columns). */
export const outcomeOf = (row: typeof TaskOutcome.Type): typeof TaskOutcome.Type => ({
  status: row.status,
  result: row.result,
  finished_at: row.finished_at
})

/**
 * One entity per task. The durable record of "run this task" is the task's own row, committed with the
 * task itself: `Run` is a plain (not persisted) message, delivered in memory when the task's shard is
 * local. A run lost with its node is started again by the new owner of the shard, which finds the task
 * unfinished in its sweep (src/tasks/TaskRecovery.ts) and replays the recorded steps. `Run` is
 * idempotent: a second `Run` joins the run in progress. `Cancel` interrupts the run wherever it is.
 */
export const TaskEntity = Entity.make("Task", [
  Rpc.make("Run", {
    payload: { task_id: Schema.String },
    success: TaskOutcome
  })
    // a caller that stops waiting (a closed HTTP connection) must not interrupt the run itself
    .annotate(ClusterSchema.Uninterruptible, "client"),
  Rpc.make("Cancel", { success: Schema.Boolean })
])
