import { Effect } from "effect"
import { CreateSchedule, Schedule } from "../../../schema/Schedules.js"
import { Schedules } from "../../schedules/Schedules.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "create_schedule",
  description: "Run an agent on a schedule (POST /v1/schedules, Builder+): `cron` (5 or 6 fields, or @daily and " +
    "the like) read in `timezone`, or `every` (an interval such as 15m). Each run is a task with source schedule.",
  input: CreateSchedule,
  output: Schedule,
  annotations: {
    title: "Create a schedule",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(Schedules, (schedules) => schedules.create(caller.principal, input))
})
