import { Effect, Schema } from "effect"
import { LlmUsage } from "../../../schema/Agents.js"
import { TaskId } from "../../../schema/Ids.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_task_usage",
  description: "A task's model usage: tokens and cost per model call, and totals (GET /v1/tasks/{task_id}/llm_usage).",
  input: Schema.Struct({ task_id: TaskId }),
  output: LlmUsage,
  annotations: {
    title: "Get a task's model usage",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ task_id }, { caller }) => Effect.flatMap(Tasks, (tasks) => tasks.usage(caller.principal, task_id))
})
