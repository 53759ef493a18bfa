import { Effect, Schema } from "effect"
import { TaskPage, TaskStatus } from "../../../schema/Agents.js"
import { AgentId, ScheduleId } from "../../../schema/Ids.js"
import { DateParam } from "../../../schema/Timestamp.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_tasks",
  description: "Tasks of your organization, newest first, with filters and paging (GET /v1/tasks).",
  input: Schema.Struct({
    agent_id: Schema.optional(AgentId),
    status: Schema.optional(TaskStatus),
    user_id: Schema.optional(Schema.String).annotations({
      description:
        "Only the tasks whose `user.id` is this: the invoke's `input.user.id` (for MCP calls, the caller's id)."
    }),
    schedule_id: Schema.optional(ScheduleId).annotations({ description: "The runs of this schedule." }),
    created_after: Schema.optional(DateParam),
    created_before: Schema.optional(DateParam),
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: TaskPage,
  annotations: {
    title: "List tasks",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (filters, { caller }) => Effect.flatMap(Tasks, (tasks) => tasks.list(caller.principal, filters))
})
