import { Either } from "effect"
import { BadRequest } from "../../schema/Errors.js"
import type { Overlap } from "../../schema/Schedules.js"
import { NextRun, Schedule } from "../../schema/Schedules.js"
import { invalidField } from "../support/Issues.js"
import type { ScheduleFields, ScheduleWithLast } from "./ScheduleRepo.js"
import {
  formatDuration,
  jitterOf,
  localIso,
  nextTick,
  nextTicks,
  parseCron,
  parseDuration,
  type Timing,
  zoneOf
} from "./ScheduleTiming.js"

/**
 * ICU's (CLDR's) names that the IANA database has since renamed: ICU answers `Asia/Kolkata` as `Asia/Calcutta`,
 * `Europe/Kyiv` as `Europe/Kiev`. Each new name is used only where ICU reads it as the same zone.
 */
const RENAMED: Record<string, string> = {
  "Africa/Asmera": "Africa/Asmara",
  "America/Buenos_Aires": "America/Argentina/Buenos_Aires",
  "America/Catamarca": "America/Argentina/Catamarca",
  "America/Cordoba": "America/Argentina/Cordoba",
  "America/Godthab": "America/Nuuk",
  "America/Indianapolis": "America/Indiana/Indianapolis",
  "America/Jujuy": "America/Argentina/Jujuy",
  "America/Louisville": "America/Kentucky/Louisville",
  "America/Mendoza": "America/Argentina/Mendoza",
  "Asia/Calcutta": "Asia/Kolkata",
  "Asia/Katmandu": "Asia/Kathmandu",
  "Asia/Rangoon": "Asia/Yangon",
  "Asia/Saigon": "Asia/Ho_Chi_Minh",
  "Atlantic/Faeroe": "Atlantic/Faroe",
  "Europe/Kiev": "Europe/Kyiv",
  "Pacific/Enderbury": "Pacific/Kanton",
  "Pacific/Ponape": "Pacific/Pohnpei",
  "Pacific/Truk": "Pacific/Chuuk"
}

/**
 * A time zone as the IANA database names it (`europe/berlin` is `Europe/Berlin`, `US/Pacific` is
 * `America/Los_Angeles`, `Asia/Calcutta` is `Asia/Kolkata`); an unknown one as given.
 */
export const zoneName = (name: string) => {
  const id = zoneOf(name)?.id
  if (id === undefined) return name
  const renamed = RENAMED[id]
  return renamed !== undefined && zoneOf(renamed)?.id === id ? renamed : id
}

/** Without `catchup_window`: the latest missed run is made if it is at most an hour late. */
export const DEFAULT_CATCHUP_MS = 3_600_000

/** The timing a schedule's fields describe, or the 400 that names what is wrong with them. */
export const timingOf = (
  fields: Pick<ScheduleFields, "cron" | "every_ms" | "timezone" | "start_at" | "end_at">,
  anchor: Date
): Either.Either<Timing, BadRequest> => {
  const zone = zoneOf(fields.timezone)
  if (zone === undefined) {
    return Either.left(BadRequest.of(
      `\`timezone\` '${fields.timezone}' is not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York).`,
      { field: "timezone" },
      "invalid_timezone"
    ))
  }
  if ((fields.cron === null) === (fields.every_ms === null)) {
    return Either.left(invalidField("", "Give exactly one of `cron` and `every`."))
  }
  if (fields.start_at !== null && fields.end_at !== null && fields.end_at < fields.start_at) {
    return Either.left(invalidField("end_at", "is before `start_at`."))
  }
  if (fields.cron !== null) {
    const cron = parseCron(fields.cron, zone)
    if (Either.isLeft(cron)) {
      return Either.left(BadRequest.of(
        `\`cron\` '${fields.cron}' ${cron.left}.`,
        { field: "cron" },
        "invalid_cron"
      ))
    }
    return Either.right({
      cron: cron.right,
      everyMs: undefined,
      anchor,
      zone,
      startAt: fields.start_at,
      endAt: fields.end_at
    })
  }
  return Either.right({
    cron: undefined,
    everyMs: fields.every_ms!,
    anchor: fields.start_at ?? anchor,
    zone,
    startAt: fields.start_at,
    endAt: fields.end_at
  })
}

/**
 * `jitter` shorter than the time between two runs (an interval's, or a cron's shortest over its next runs):
 * a run delayed past the next one's time would be taken as missed, and the schedule would run less often
 * than it says.
 */
export const jitterFits = (timing: Timing, jitterMs: number, now: Date): Either.Either<void, BadRequest> => {
  if (jitterMs === 0) return Either.void
  let gap = timing.everyMs
  if (gap === undefined) {
    const ticks = nextTicks(timing, now, 10)
    for (let i = 1; i < ticks.length; i++) {
      gap = Math.min(gap ?? Infinity, ticks[i]!.getTime() - ticks[i - 1]!.getTime())
    }
  }
  return gap === undefined || jitterMs < gap ? Either.void : Either.left(invalidField(
    "jitter",
    `must be shorter than the time between two runs (${formatDuration(gap)}): a run delayed past the next ` +
      "one's time is taken as missed."
  ))
}

/** A duration field as ms, or the 400 that names it; `min` the least it may be. */
export const durationOf = (field: string, text: string, min: number): Either.Either<number, BadRequest> => {
  const ms = parseDuration(text)
  return ms === undefined || ms < min || ms > 366 * 86_400_000
    ? Either.left(BadRequest.of(
      `\`${field}\` '${text}' is not a duration of ${formatDuration(min)} to 366d (e.g. 30s, 15m, 1h30m, 1d).`,
      { field },
      "invalid_duration"
    ))
    : Either.right(ms)
}

/** When the schedule next runs from `now`: its next tick, and that tick's run instant (jitter added). */
export const nextFrom = (
  id: string,
  fields: Pick<ScheduleFields, "enabled" | "jitter_ms">,
  timing: Timing,
  now: Date
): Pick<ScheduleFields, "next_tick" | "next_run_at"> => {
  const tick = fields.enabled ? nextTick(timing, new Date(now.getTime() - 1)) : undefined
  return tick === undefined
    ? { next_tick: null, next_run_at: null }
    : { next_tick: tick, next_run_at: new Date(tick.getTime() + jitterOf(id, tick, fields.jitter_ms)) }
}

export const overlapOf = (overlap: Overlap | undefined): Overlap => overlap ?? "skip"

/** The schedule as its readers see it, with its next 5 runs from the later of now and `start_at`. */
export const toSchedule = (row: ScheduleWithLast, now: Date) => {
  const timing = Either.getOrUndefined(timingOf(row, row.created_at))
  const runs = row.enabled && timing !== undefined ? nextTicks(timing, now, 5) : []
  return new Schedule({
    id: row.id,
    name: row.name,
    agent_id: row.agent_id,
    cron: row.cron,
    every: row.every_ms === null ? null : formatDuration(row.every_ms),
    timezone: row.timezone,
    input: { text: row.input_text, user: { id: row.user_id, email: row.user_email } },
    enabled: row.enabled,
    start_at: row.start_at,
    end_at: row.end_at,
    jitter: row.jitter_ms === 0 ? null : formatDuration(row.jitter_ms),
    overlap: row.overlap,
    catchup_window: formatDuration(row.catchup_window_ms),
    next_runs: runs.map((at) => NextRun.make({ utc: at.toISOString(), local: localIso(timing!.zone, at) })),
    last_run: row.last,
    created_at: row.created_at,
    updated_at: row.updated_at
  })
}
