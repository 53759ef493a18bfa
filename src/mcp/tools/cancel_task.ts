import { Effect, Schema } from "effect"
import { Task } from "../../../schema/Agents.js"
import { TaskId } from "../../../schema/Ids.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "cancel_task",
  description: "Cancel a pending, running or waiting task; its model or tool call in flight is interrupted " +
    "(POST /v1/tasks/{task_id}/cancel). An ended task is an error (task_ended).",
  input: Schema.Struct({ task_id: TaskId }),
  output: Task,
  annotations: {
    title: "Cancel a task",
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ task_id }, { caller }) => Effect.flatMap(Tasks, (tasks) => tasks.cancel(caller.principal, task_id))
})
