import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Task } from "./Agents.js"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire, PaymentRequiredWire } from "./Errors.js"
import { AgentId, ScheduleId } from "./Ids.js"
import { CreateSchedule, Schedule, SchedulePage, UpdateSchedule } from "./Schedules.js"
import { Authentication } from "./Security.js"

const SchedulePath = Schema.Struct({ schedule_id: ScheduleId })

export class SchedulesApi extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("listSchedules", "/schedules")
      .setUrlParams(Schema.Struct({ agent_id: Schema.optional(AgentId) }))
      .addSuccess(SchedulePage)
      .annotate(OpenApi.Description, "Schedules of the agents you may use.")
  )
  .add(
    HttpApiEndpoint.post("createSchedule", "/schedules")
      .setPayload(CreateSchedule)
      .addSuccess(Schedule, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Create a schedule (Builder+): the agent runs on a cron expression or an interval. Its runs are tasks " +
          "with `source: \"schedule\"`. 400 `invalid_cron`, `invalid_timezone` or `invalid_duration` names the " +
          "field that is wrong."
      )
  )
  .add(
    HttpApiEndpoint.get("getSchedule", "/schedules/:schedule_id")
      .setPath(SchedulePath)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "A schedule with its next 5 runs (`next_runs`) and its last run.")
  )
  .add(
    HttpApiEndpoint.patch("updateSchedule", "/schedules/:schedule_id")
      .setPath(SchedulePath)
      .setPayload(UpdateSchedule)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "Change a schedule (Builder+). Its next run is computed again from now.")
  )
  .add(
    HttpApiEndpoint.del("deleteSchedule", "/schedules/:schedule_id")
      .setPath(SchedulePath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a schedule (Builder+). Its past runs stay as tasks.")
  )
  .add(
    HttpApiEndpoint.post("pauseSchedule", "/schedules/:schedule_id/pause")
      .setPath(SchedulePath)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "Pause (Builder+): no run until resumed. Runs missed meanwhile are not made.")
  )
  .add(
    HttpApiEndpoint.post("resumeSchedule", "/schedules/:schedule_id/resume")
      .setPath(SchedulePath)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "Resume (Builder+): the next run is the schedule's next time from now.")
  )
  .add(
    HttpApiEndpoint.post("triggerSchedule", "/schedules/:schedule_id/trigger")
      .setPath(SchedulePath)
      .addSuccess(Task, { status: 202 })
      .addError(PaymentRequiredWire)
      .annotate(
        OpenApi.Description,
        "Run now (Builder+), also while paused, whatever the overlap policy: the task is returned pending (202)."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Schedules")
{}
