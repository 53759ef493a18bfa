import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Task } from "./Agents.js"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire, PaymentRequiredWire } from "./Errors.js"
import { ScheduleId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { CreateSchedule, Schedule, ScheduleListParams, SchedulePage, UpdateSchedule } from "./Schedules.js"
import { Authentication } from "./Security.js"

const SchedulePath = Schema.Struct({ schedule_id: ScheduleId })

export class SchedulesApi extends HttpApiGroup.make("schedules")
  .add(
    HttpApiEndpoint.get("listSchedules", "/schedules")
      .annotateContext(
        operation({
          summary: "List schedules",
          permission: Policy.anyMember,
          errors: ["not_found", "invalid_cursor"],
          access: "The schedules of the agents the key may use."
        })
      )
      .setUrlParams(ScheduleListParams)
      .addSuccess(SchedulePage)
      .annotate(OpenApi.Description, "Schedules of the agents you may use.")
  )
  .add(
    HttpApiEndpoint.post("createSchedule", "/schedules")
      .annotateContext(
        operation({
          summary: "Create a schedule",
          permission: Policy.createSchedules,
          errors: ["invalid_cron", "invalid_timezone", "invalid_duration", "not_found"]
        })
      )
      .setPayload(CreateSchedule)
      .addSuccess(Schedule, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Create a schedule: the agent runs on a cron expression or an interval. Its runs are tasks " +
          "with `source: \"schedule\"`. 400 `invalid_cron`, `invalid_timezone` or `invalid_duration` names the " +
          "field that is wrong."
      )
  )
  .add(
    HttpApiEndpoint.get("getSchedule", "/schedules/:schedule_id")
      .annotateContext(operation({ summary: "Get a schedule", permission: Policy.anyMember, errors: [] }))
      .setPath(SchedulePath)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "A schedule with its next 5 runs (`next_runs`) and its last run.")
  )
  .add(
    HttpApiEndpoint.patch("updateSchedule", "/schedules/:schedule_id")
      .annotateContext(
        operation({
          summary: "Change a schedule",
          permission: Policy.changeSchedules,
          access: "Its runs are invoked as its creator: one made by an organization key limited to agents may be " +
            "pointed only at one of them (else 403 `forbidden`).",
          errors: [
            "invalid_cron",
            "invalid_timezone",
            "invalid_duration",
            "not_found",
            "schedule_agent_deleted",
            "conflict"
          ]
        })
      )
      .setPath(SchedulePath)
      .setPayload(UpdateSchedule)
      .addSuccess(Schedule)
      .annotate(
        OpenApi.Description,
        "Change a schedule. A change of its timing (`cron`, `every`, `timezone`, `start_at`, `end_at`, `jitter`) " +
          "or a resume computes its next run again from now; any other change keeps it. A change that changes " +
          "nothing (`{}`) answers the schedule as it is, without writing it."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteSchedule", "/schedules/:schedule_id")
      .annotateContext(operation({ summary: "Delete a schedule", permission: Policy.deleteSchedules, errors: [] }))
      .setPath(SchedulePath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a schedule. Its past runs stay as tasks.")
  )
  .add(
    HttpApiEndpoint.post("pauseSchedule", "/schedules/:schedule_id/pause")
      .annotateContext(
        operation({
          summary: "Pause a schedule",
          permission: Policy.pauseSchedules,
          errors: ["invalid_cron", "invalid_timezone"]
        })
      )
      .setPath(SchedulePath)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "Pause: no run until resumed. Runs missed meanwhile are not made.")
  )
  .add(
    HttpApiEndpoint.post("resumeSchedule", "/schedules/:schedule_id/resume")
      .annotateContext(
        operation({
          summary: "Resume a schedule",
          permission: Policy.resumeSchedules,
          errors: ["invalid_cron", "invalid_timezone", "schedule_agent_deleted", "conflict"]
        })
      )
      .setPath(SchedulePath)
      .addSuccess(Schedule)
      .annotate(OpenApi.Description, "Resume: the next run is the schedule's next time from now.")
  )
  .add(
    HttpApiEndpoint.post("triggerSchedule", "/schedules/:schedule_id/trigger")
      .annotateContext(
        operation({
          summary: "Run a schedule now",
          permission: Policy.triggerSchedules,
          errors: ["budget_exhausted", "conflict", "schedule_agent_deleted"]
        })
      )
      .setPath(SchedulePath)
      .addSuccess(Task, { status: 202 })
      .addError(PaymentRequiredWire)
      .annotate(
        OpenApi.Description,
        "Run now, also while paused, whatever the overlap policy: the task is returned pending (202)."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Schedules")
  .annotate(
    OpenApi.Description,
    "Agent runs on a cron expression or an interval (docs/guides/schedules.md)."
  )
{}
