import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { TaskStatus } from "../schema/Agents.js"

export const TaskOutcome = Schema.Struct({
  status: TaskStatus,
  result: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.Date)
})

/**
 * One entity per task. `Run` is persisted: if the node running it dies, the message is delivered again
 * to the task's new owner, which resumes the run (recorded steps are replayed, not re-executed).
 * `Cancel` interrupts the run wherever it is.
 */
export const TaskEntity = Entity.make("Task", [
  Rpc.make("Run", {
    payload: { task_id: Schema.String },
    success: TaskOutcome,
    primaryKey: ({ task_id }) => task_id
  })
    .annotate(ClusterSchema.Persisted, true)
    // a caller that stops waiting (a closed HTTP connection) must not interrupt the run itself
    .annotate(ClusterSchema.Uninterruptible, "client"),
  Rpc.make("Cancel", { success: Schema.Boolean })
])
