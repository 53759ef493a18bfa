import { Effect, Schema } from "effect"
import { Thread } from "../../../schema/Agents.js"
import { TaskId } from "../../../schema/Ids.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_task_thread",
  description: "A task's thread: the prompt, each model call with its cost, each tool call with its " +
    "arguments and result, and the answer (GET /v1/tasks/{task_id}/thread).",
  input: Schema.Struct({ task_id: TaskId }),
  output: Thread,
  annotations: {
    title: "Get a task's thread",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ task_id }, { caller }) => Effect.flatMap(Tasks, (tasks) => tasks.thread(caller.principal, task_id))
})
