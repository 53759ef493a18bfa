import { Effect, Schema } from "effect"
import { ScheduleId } from "../../../schema/Ids.js"
import { Schedule, UpdateSchedule } from "../../../schema/Schedules.js"
import { Schedules } from "../../schedules/Schedules.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "update_schedule",
  description: "Change a schedule (PATCH /v1/schedules/{schedule_id}, Builder+): fields left out stay, `null` " +
    "clears `start_at`, `end_at` or `jitter`; `enabled: false` pauses it. A change of its timing, or a resume, computes its next run again from now.",
  input: Schema.Struct({ schedule_id: ScheduleId, ...UpdateSchedule.fields }),
  output: Schedule,
  annotations: {
    title: "Change a schedule",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ schedule_id, ...change }, { caller }) =>
    Effect.flatMap(Schedules, (schedules) => schedules.update(caller.principal, schedule_id, change))
})
