import { Effect, Schema } from "effect"
import { ScheduleId } from "../../../schema/Ids.js"
import { Schedules } from "../../schedules/Schedules.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "delete_schedule",
  description: "Delete a schedule (DELETE /v1/schedules/{schedule_id}, Builder+). Its past runs stay as tasks.",
  input: Schema.Struct({ schedule_id: ScheduleId }),
  output: Schema.Struct({ schedule_id: ScheduleId, deleted: Schema.Literal(true) }),
  annotations: {
    title: "Delete a schedule",
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: false
  },
  run: ({ schedule_id }, { caller }) =>
    Effect.flatMap(Schedules, (schedules) => schedules.remove(caller.principal, schedule_id)).pipe(
      Effect.as({ schedule_id, deleted: true as const })
    )
})
