import { Schema } from "effect"
import { InvokeAgent } from "./Agents.js"
import { AgentId, ScheduleId, TaskId } from "./Ids.js"
import { optionalPage, PagedList } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { DateParam, Timestamp } from "./Timestamp.js"

/** What a duration's text is: `90s`, `15m`, `1h30m`, `2d` (units ms, s, m, h, d). */
export const DURATION_PATTERN = /^(\d{1,9}(ms|s|m|h|d))+$/

/**
 * A length of time as sent and shown. Its pattern is in the document only: the service reads it
 * (src/schedules/ScheduleRules.ts, `durationOf`), so a text that is no duration is 400 `invalid_duration` with
 * `details.field`, as one out of range is, rather than the decoder's `validation_failed`.
 */
export const DurationText = Schema.String.annotations({ jsonSchema: { pattern: DURATION_PATTERN.source } })

export const Overlap = Schema.Literal("skip", "buffer_one", "allow").annotations({
  description: "When a run is due while the schedule's previous run is still going: `skip` it (default), " +
    "`buffer_one` (keep one run waiting, started when the previous one ends; further ones are skipped), or " +
    "`allow` it to run alongside."
})
export type Overlap = typeof Overlap.Type

// described on the fields: a description on the struct stands in for its message ("Expected <it>, actual …")
export const ScheduleInput = InvokeAgent.fields.input
const describedInput = {
  description: "What each run sends the agent: `text`, and `user`, the person each run is recorded under."
}

const timing = {
  cron: Schema.String.annotations({
    description: "A cron expression: 5 fields (minute hour day month weekday), or 6 with seconds first; or a macro " +
      "(@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly). Read in `timezone`."
  }),
  every: DurationText.annotations({
    description: "Instead of `cron`: a fixed interval (at least 1s), counted from `start_at` (else the creation)."
  }),
  timezone: Schema.String.annotations({
    description: "IANA time zone the cron expression is read in, e.g. Europe/Berlin. Default UTC."
  }),
  start_at: DateParam.annotations({ description: "No run before this instant." }),
  end_at: DateParam.annotations({ description: "No run after this instant." }),
  jitter: DurationText.annotations({
    description: "Each run starts up to this much later than its time (a fixed offset per run), to spread load. " +
      "Shorter than the time between two runs."
  }),
  catchup_window: DurationText.annotations({
    description: "After downtime, the latest missed run is still made once if it is at most this late. " +
      "Default 1h; `0s`: only runs at most 30 s late are made."
  })
}

export const CreateSchedule = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  agent_id: AgentId,
  cron: Schema.optional(timing.cron),
  every: Schema.optional(timing.every),
  timezone: Schema.optional(timing.timezone),
  input: Schema.propertySignature(ScheduleInput).annotations(describedInput),
  enabled: Schema.optional(Schema.Boolean).annotations({ description: "Default true." }),
  start_at: Schema.optional(timing.start_at),
  end_at: Schema.optional(timing.end_at),
  jitter: Schema.optional(timing.jitter),
  overlap: Schema.optional(Overlap),
  catchup_window: Schema.optional(timing.catchup_window)
}).annotations({ identifier: "CreateSchedule", ...requestBody })
export type CreateSchedule = typeof CreateSchedule.Type

/** A change: fields left out stay; `null` clears an optional one. Setting `cron` clears `every`, and back. */
export const UpdateSchedule = Schema.Struct({
  name: Schema.optional(CreateSchedule.fields.name),
  agent_id: Schema.optional(AgentId),
  cron: Schema.optional(timing.cron),
  every: Schema.optional(timing.every),
  timezone: Schema.optional(timing.timezone),
  input: Schema.optional(ScheduleInput).annotations(describedInput),
  enabled: Schema.optional(Schema.Boolean).annotations({
    description: "`false` pauses the schedule, `true` resumes it."
  }),
  start_at: Schema.optional(Schema.NullOr(timing.start_at)).annotations({
    description: "No run before this instant; `null` clears it."
  }),
  end_at: Schema.optional(Schema.NullOr(timing.end_at)).annotations({
    description: "No run after this instant; `null` clears it."
  }),
  jitter: Schema.optional(Schema.NullOr(timing.jitter)).annotations({
    description: "Each run starts up to this much later than its time, to spread load; `null` clears it."
  }),
  overlap: Schema.optional(Overlap),
  catchup_window: Schema.optional(timing.catchup_window)
}).annotations({ identifier: "UpdateSchedule", ...requestBody })
export type UpdateSchedule = typeof UpdateSchedule.Type

export const NextRun = Schema.Struct({
  utc: Schema.String.annotations({ description: "ISO 8601 in UTC, e.g. 2026-03-29T01:00:00.000Z." }),
  local: Schema.String.annotations({
    description: "The same instant in the schedule's time zone, with its offset, e.g. 2026-03-29T03:00:00.000+02:00."
  })
}).annotations({ identifier: "NextRun" })

export const RunStatus = Schema.Literal("pending", "fired", "skipped", "buffered", "failed").annotations({
  description: "`fired`: its task was made (`task_id`). `pending`: being made. `skipped`: the previous run was " +
    "still going (overlap `skip`, or `buffer_one` with one already waiting). `buffered`: waits for the previous " +
    "run to end. `failed`: no task could be made (`reason`: the agent is gone, its budget is spent)."
})

export const ScheduleRun = Schema.Struct({
  scheduled_for: Timestamp.annotations({ description: "The run's time by the schedule (before jitter)." }),
  kind: Schema.Literal("scheduled", "catchup", "manual").annotations({
    description: "`catchup`: made late, after downtime (within `catchup_window`). `manual`: POST …/trigger."
  }),
  status: RunStatus,
  task_id: Schema.NullOr(TaskId),
  reason: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ScheduleRun" })
export type ScheduleRun = typeof ScheduleRun.Type

export class Schedule extends Schema.Class<Schedule>("Schedule")({
  id: ScheduleId,
  name: Schema.String,
  agent_id: AgentId,
  cron: Schema.NullOr(Schema.String),
  every: Schema.NullOr(Schema.String),
  timezone: Schema.String,
  input: Schema.propertySignature(ScheduleInput).annotations(describedInput),
  enabled: Schema.Boolean,
  start_at: Schema.NullOr(Timestamp),
  end_at: Schema.NullOr(Timestamp),
  jitter: Schema.NullOr(Schema.String),
  overlap: Overlap,
  catchup_window: Schema.String,
  next_runs: Schema.Array(NextRun).annotations({
    description: "The next 5 runs from the later of now and `start_at` (none while paused or past `end_at`)."
  }),
  last_run: Schema.NullOr(ScheduleRun),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const SchedulePage = PagedList(Schedule, "SchedulePage", "schedules")

export const ScheduleListParams = Schema.Struct({
  agent_id: Schema.optional(AgentId),
  ...optionalPage("Schedules", "every schedule")
})
