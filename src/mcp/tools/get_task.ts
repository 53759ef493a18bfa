import { Effect, Schema } from "effect"
import { Task } from "../../../schema/Agents.js"
import { TaskId } from "../../../schema/Ids.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_task",
  description: "Read a task: status and result (GET /v1/tasks/{task_id}); `wait` long-polls until it ends.",
  input: Schema.Struct({
    task_id: TaskId,
    wait: Schema.optional(Schema.Number.pipe(Schema.between(0, 60))).annotations({
      description: "Seconds (0–60) to wait for the task to end before answering."
    })
  }),
  output: Task,
  annotations: {
    title: "Get a task",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ task_id, wait }, { caller }) =>
    Effect.flatMap(Tasks, (tasks) => tasks.get(caller.principal, task_id, wait ?? 0))
})
