import { Effect, Schema } from "effect"
import { Task } from "../../../schema/Agents.js"
import { ScheduleId } from "../../../schema/Ids.js"
import { Schedules } from "../../schedules/Schedules.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "trigger_schedule",
  description: "Run a schedule now (POST /v1/schedules/{schedule_id}/trigger, Builder+), also while paused: the " +
    "task, pending; read it with get_task.",
  input: Schema.Struct({ schedule_id: ScheduleId }),
  output: Task,
  annotations: {
    title: "Run a schedule now",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: true
  },
  run: ({ schedule_id }, { caller }) =>
    Effect.flatMap(Schedules, (schedules) => schedules.trigger(caller.principal, schedule_id))
})
