import { Effect, Schema } from "effect"
import { AgentId } from "../../../schema/Ids.js"
import { optionalPageInput } from "../../../schema/QueryParams.js"
import { SchedulePage } from "../../../schema/Schedules.js"
import { Schedules } from "../../schedules/Schedules.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_schedules",
  description: "Schedules of the agents you may use, each with its next 5 runs and its last run (GET /v1/schedules).",
  input: Schema.Struct({
    agent_id: Schema.optional(AgentId),
    ...optionalPageInput("Schedules", "every schedule")
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
