import { Effect, Schema } from "effect"
import { AgentId } from "../../../schema/Ids.js"
import { SchedulePage } from "../../../schema/Schedules.js"
import { Schedules } from "../../schedules/Schedules.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_schedules",
  description: "Schedules of the agents you may use, each with its next 5 runs and its last run (GET /v1/schedules).",
  input: Schema.Struct({
    agent_id: Schema.optional(AgentId),
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))).annotations({
      description: "Schedules per page, oldest first; without it (and `cursor`), every schedule at once."
    }),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: SchedulePage,
  annotations: {
    title: "List schedules",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (params, { caller }) => Effect.flatMap(Schedules, (schedules) => schedules.list(caller.principal, params))
})
