import { Schema } from "effect"
import { AgentId, TaskId } from "./Ids.js"

/**
 * A streamed invoke's extra event (issue 22; docs/guides/events.md "Streamed invoke"): a piece of the model's
 * text as it is generated. Sent as `event: task.output.delta` with this as `data:` and no `id:` line: it is not
 * in the event log, so no stream can resume from it, and a reconnecting client resumes after the last logged
 * event it saw.
 */
export const TaskOutputDelta = Schema.Struct({
  type: Schema.Literal("task.output.delta"),
  data: Schema.Struct({
    task_id: TaskId,
    agent_id: AgentId,
    step: Schema.Int.annotations({
      description: "The run's step (its model call): the `task.model_call` event of this step follows its pieces."
    }),
    text: Schema.String.annotations({ description: "The next piece of the model's text." })
  })
}).annotations({ identifier: "TaskOutputDelta" })
export type TaskOutputDelta = typeof TaskOutputDelta.Type

export const OUTPUT_DELTA = "task.output.delta"
