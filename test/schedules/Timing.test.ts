import { Cron, Either } from "effect"
import { describe, expect, it } from "vitest"
import { decide } from "../../src/schedules/Scheduler.js"
import type { ClaimedSchedule } from "../../src/schedules/ScheduleRepo.js"
import { timingOf, zoneName } from "../../src/schedules/ScheduleRules.js"
import {
  dueTick,
  formatDuration,
  jitterOf,
  localIso,
  nextTick,
  nextTicks,
  parseDuration,
  type Timing,
  zoneOf
} from "../../src/schedules/ScheduleTiming.js"

/** The timing the scheduler uses for a schedule of these fields (ScheduleRules.timingOf). */
const timing = (fields: { cron?: string; every_ms?: number; timezone?: string; start_at?: Date; end_at?: Date }) => {
  const t = timingOf({
    cron: fields.cron ?? null,
    every_ms: fields.every_ms ?? null,
    timezone: fields.timezone ?? "UTC",
    start_at: fields.start_at ?? null,
    end_at: fields.end_at ?? null
  }, new Date("2025-01-01T00:00:00Z"))
  if (Either.isLeft(t)) throw new Error(t.left.message)
  return t.right
}

/** The daily 02:30 job's runs from `from`, as UTC and local ISO strings. */
const daily0230 = (timezone: string, from: string, count = 3) => {
  const t = timing({ cron: "30 2 * * *", timezone })
  return nextTicks(t, new Date(from), count).map((at) => [at.toISOString(), localIso(t.zone, at)])
}

describe("daily 02:30 across DST (the rule in docs/guides/schedules.md)", () => {
  it("Europe/Berlin spring-forward: runs once, at 03:00, the first instant after the gap", () => {
    expect(daily0230("Europe/Berlin", "2025-03-29T12:00:00Z")).toEqual([
      ["2025-03-30T01:00:00.000Z", "2025-03-30T03:00:00.000+02:00"],
      ["2025-03-31T00:30:00.000Z", "2025-03-31T02:30:00.000+02:00"],
      ["2025-04-01T00:30:00.000Z", "2025-04-01T02:30:00.000+02:00"]
    ])
  })

  it("Europe/Berlin fall-back: 02:30 happens twice and runs once, at the first", () => {
    expect(daily0230("Europe/Berlin", "2025-10-25T12:00:00Z")).toEqual([
      ["2025-10-26T00:30:00.000Z", "2025-10-26T02:30:00.000+02:00"],
      ["2025-10-27T01:30:00.000Z", "2025-10-27T02:30:00.000+01:00"],
      ["2025-10-28T01:30:00.000Z", "2025-10-28T02:30:00.000+01:00"]
    ])
  })

  it("America/New_York spring-forward: runs once, at 03:00 EDT", () => {
    expect(daily0230("America/New_York", "2025-03-08T12:00:00Z")).toEqual([
      ["2025-03-09T07:00:00.000Z", "2025-03-09T03:00:00.000-04:00"],
      ["2025-03-10T06:30:00.000Z", "2025-03-10T02:30:00.000-04:00"],
      ["2025-03-11T06:30:00.000Z", "2025-03-11T02:30:00.000-04:00"]
    ])
  })

  it("America/New_York fall-back: runs once (02:30 is after the repeated hour; 01:30, in it, runs once too)", () => {
    expect(daily0230("America/New_York", "2025-11-01T12:00:00Z")).toEqual([
      ["2025-11-02T07:30:00.000Z", "2025-11-02T02:30:00.000-05:00"],
      ["2025-11-03T07:30:00.000Z", "2025-11-03T02:30:00.000-05:00"],
      ["2025-11-04T07:30:00.000Z", "2025-11-04T02:30:00.000-05:00"]
    ])
    const t = timing({ cron: "30 1 * * *", timezone: "America/New_York" })
    expect(nextTicks(t, new Date("2025-11-01T12:00:00Z"), 2).map((d) => localIso(t.zone, d))).toEqual([
      "2025-11-02T01:30:00.000-04:00",
      "2025-11-03T01:30:00.000-05:00"
    ])
  })

  it("the scheduler makes each of those runs once: stepping tick by tick through both changes", () => {
    for (const timezone of ["Europe/Berlin", "America/New_York"]) {
      const t = timing({ cron: "30 2 * * *", timezone })
      const runs = nextTicks(t, new Date("2025-01-01T00:00:00Z"), 365)
      const days = runs.map((at) => localIso(t.zone, at).slice(0, 10))
      expect(new Set(days).size).toBe(365)
      for (let i = 1; i < runs.length; i++) expect(runs[i]!.getTime()).toBeGreaterThan(runs[i - 1]!.getTime())
    }
  })
})

describe("cron and interval timing", () => {
  it("reads 6 fields (seconds first) and the macros", () => {
    const from = new Date("2025-06-01T10:00:00Z")
    expect(nextTicks(timing({ cron: "*/20 * * * * *" }), from, 3).map((d) => d.toISOString())).toEqual([
      "2025-06-01T10:00:00.000Z",
      "2025-06-01T10:00:20.000Z",
      "2025-06-01T10:00:40.000Z"
    ])
    expect(nextTicks(timing({ cron: "@daily", timezone: "Europe/Berlin" }), from, 1)[0]!.toISOString()).toBe(
      "2025-06-01T22:00:00.000Z"
    )
    expect(nextTicks(timing({ cron: "@hourly" }), from, 2).map((d) => d.toISOString())).toEqual([
      "2025-06-01T10:00:00.000Z",
      "2025-06-01T11:00:00.000Z"
    ])
  })

  it("counts an interval from start_at, and stops at end_at", () => {
    const t = timing({
      every_ms: 90 * 60_000,
      start_at: new Date("2025-06-01T09:00:00Z"),
      end_at: new Date("2025-06-01T13:00:00Z")
    })
    expect(nextTicks(t, new Date("2025-06-01T00:00:00Z"), 5).map((d) => d.toISOString())).toEqual([
      "2025-06-01T09:00:00.000Z",
      "2025-06-01T10:30:00.000Z",
      "2025-06-01T12:00:00.000Z"
    ])
  })

  it("reads and writes durations", () => {
    expect(parseDuration("1h30m")).toBe(5_400_000)
    expect(parseDuration("90s")).toBe(90_000)
    expect(parseDuration("1.5h")).toBeUndefined()
    expect(formatDuration(5_400_000)).toBe("90m")
    expect(formatDuration(3_600_000)).toBe("1h")
    expect(formatDuration(0)).toBe("0s")
  })
})

describe("a cron expression that never matches a date", () => {
  const fields = (cron: string, timezone = "UTC") => ({
    cron,
    every_ms: null,
    timezone,
    start_at: null,
    end_at: null
  })

  it("is refused as invalid_cron, saying it never matches, in any zone", () => {
    for (const cron of ["0 0 31 2 *", "0 0 30,31 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 */2"]) {
      for (const timezone of ["UTC", "Europe/Berlin"]) {
        const t = timingOf(fields(cron, timezone), new Date("2025-01-01T00:00:00Z"))
        if (Either.isRight(t)) throw new Error(`${cron} in ${timezone} was accepted`)
        expect(t.left).toMatchObject({ code: "invalid_cron", details: { field: "cron" } })
        expect(t.left.message).toBe(
          `\`cron\` '${cron}' never matches a date: the days of the month it names are in none of its months ` +
            "(e.g. 31 February)."
        )
      }
    }
  })

  it("rare ones are accepted: 29 February, a day or a weekday, a day some of its months have", () => {
    const from = new Date("2025-01-01T00:00:00Z")
    expect(nextTicks(timing({ cron: "0 0 29 2 *" }), from, 2).map((d) => d.toISOString())).toEqual([
      "2028-02-29T00:00:00.000Z",
      "2032-02-29T00:00:00.000Z"
    ])
    // a day and a weekday: either matches, so the Mondays of February
    expect(nextTicks(timing({ cron: "0 0 31 2 1" }), from, 1)[0]!.toISOString()).toBe("2025-02-03T00:00:00.000Z")
    expect(nextTicks(timing({ cron: "0 0 31 2,3 *", timezone: "Europe/Berlin" }), from, 1)[0]!.toISOString())
      .toBe("2025-03-30T22:00:00.000Z")
  })

  /** The timing of a schedule stored before such expressions were refused (not through timingOf). */
  const stored = (cron: string, timezone: string): Timing => {
    const zone = zoneOf(timezone)!
    return {
      cron: Either.getOrThrow(Cron.parse(cron, zone)),
      everyMs: undefined,
      anchor: new Date("2025-01-01T00:00:00Z"),
      zone,
      startAt: null,
      endAt: null
    }
  }

  it("one stored before has no ticks: stepping it never throws", () => {
    for (const timezone of ["UTC", "Europe/Berlin"]) {
      const t = stored("0 0 31 2 *", timezone)
      expect(nextTick(t, new Date("2025-06-01T00:00:00Z"))).toBeUndefined()
      expect(nextTicks(t, new Date("2025-06-01T00:00:00Z"), 5)).toEqual([])
      // (the scheduler never gets here with one: timingOf refuses it, and the schedule is moved off, below)
      expect(dueTick(t, new Date("2025-06-01T00:00:00Z"), new Date("2025-06-01T00:00:01Z"), 3600_000).following)
        .toBeUndefined()
    }
  })
})

describe("catch-up after downtime", () => {
  const everyMinute = timing({ cron: "* * * * *" })
  const hourly = timing({ cron: "0 * * * *" })

  it("a due tick claimed on time is made as scheduled", () => {
    const due = dueTick(everyMinute, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:00:00.300Z"), 3600_000)
    expect(due.fire?.toISOString()).toBe("2025-06-01T10:00:00.000Z")
    expect(due.late).toBe(false)
    expect(due.following?.toISOString()).toBe("2025-06-01T10:01:00.000Z")
  })

  it("after 30 minutes down, every-minute runs once (the latest missed), not 30 times", () => {
    const due = dueTick(everyMinute, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:30:20Z"), 3600_000)
    expect(due.fire?.toISOString()).toBe("2025-06-01T10:30:00.000Z")
    expect(due.late).toBe(true)
    expect(due.following?.toISOString()).toBe("2025-06-01T10:31:00.000Z")
  })

  it("a miss within the window (default 1h) is made once; one beyond it is not", () => {
    const within = dueTick(hourly, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:59:00Z"), 3600_000)
    expect(within.fire?.toISOString()).toBe("2025-06-01T10:00:00.000Z")
    const beyond = dueTick(hourly, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:59:00Z"), 1800_000)
    expect(beyond.fire).toBeUndefined()
    expect(beyond.following?.toISOString()).toBe("2025-06-01T11:00:00.000Z")
  })

  it("after a week down with a long window, an every-second schedule runs once, for the latest time due", () => {
    const next = new Date("2026-11-20T00:00:00Z")
    const now = new Date("2026-11-28T00:00:00.400Z")
    for (const t of [timing({ cron: "* * * * * *", timezone: "Europe/Berlin" }), timing({ every_ms: 1000 })]) {
      const due = dueTick(t, next, now, 366 * 86_400_000)
      expect(due.fire?.toISOString()).toBe("2026-11-28T00:00:00.000Z")
      expect(due.late).toBe(true)
      expect(due.following?.toISOString()).toBe("2026-11-28T00:00:01.000Z")
    }
  })

  it("the latest time due across a fall-back is the one the schedule's own stepping gives", () => {
    // */30 in Berlin makes no run in the repeated hour's second pass: 02:30 +02:00 is followed by 03:00 +01:00
    const t = timing({ cron: "*/30 * * * *", timezone: "Europe/Berlin" })
    const due = dueTick(t, new Date("2026-10-20T00:00:00Z"), new Date("2026-10-25T01:45:00Z"), 30 * 86_400_000)
    expect(localIso(t.zone, due.fire!)).toBe("2026-10-25T02:30:00.000+02:00")
    expect(localIso(t.zone, due.following!)).toBe("2026-10-25T03:00:00.000+01:00")
  })

  it("a scheduler held up a few seconds makes each tick it is behind on, on time, not just the latest", () => {
    // every second, claimed 2.3 s late (a node under load): 10:00:00 is made, and the schedule stays due
    for (const t of [timing({ cron: "* * * * * *" }), timing({ every_ms: 1000 })]) {
      const due = dueTick(t, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:00:02.300Z"), 0)
      expect(due.fire?.toISOString()).toBe("2025-06-01T10:00:00.000Z")
      expect(due.late).toBe(false)
      expect(due.following?.toISOString()).toBe("2025-06-01T10:00:01.000Z")
    }
  })

  it("with a window of 0s, a tick up to 30 s late is still on time", () => {
    const due = dueTick(hourly, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:00:20Z"), 0)
    expect(due.fire?.toISOString()).toBe("2025-06-01T10:00:00.000Z")
    expect(dueTick(hourly, new Date("2025-06-01T10:00:00Z"), new Date("2025-06-01T10:00:40Z"), 0).fire)
      .toBeUndefined()
  })
})

/** A claimed schedule as the scheduler gets it: every minute, its previous run still going. */
const claimed = (overrides: Partial<ClaimedSchedule>): ClaimedSchedule => ({
  id: "00000000-0000-4000-8000-000000000001" as any,
  organization_id: "00000000-0000-4000-8000-000000000002" as any,
  agent_id: "00000000-0000-4000-8000-000000000003" as any,
  name: "s",
  cron: "* * * * *",
  every_ms: null,
  timezone: "UTC",
  input_text: "hi",
  user_id: "u",
  user_email: "u@example.com",
  enabled: true,
  start_at: null,
  end_at: null,
  jitter_ms: 0,
  overlap: "skip",
  catchup_window_ms: 3600_000,
  created_by: null,
  created_by_key: "k",
  next_tick: new Date("2025-06-01T10:00:00Z"),
  next_run_at: new Date("2025-06-01T10:00:00Z"),
  created_at: new Date("2025-01-01T00:00:00Z"),
  updated_at: new Date("2025-01-01T00:00:00Z"),
  running: true,
  buffered_for: null,
  ...overrides
})
describe("overlap: what the scheduler decides for a due schedule whose previous run is still going", () => {
  const now = new Date("2025-06-01T10:00:00.200Z")
  const statusOf = (s: ClaimedSchedule) => decide([s], now).ticks.map((t) => t.status)

  it("skip: the run is skipped; allow: it runs; buffer_one: it waits, and a second one is skipped", () => {
    expect(statusOf(claimed({ overlap: "skip" }))).toEqual(["skipped"])
    expect(statusOf(claimed({ overlap: "allow" }))).toEqual(["pending"])
    expect(statusOf(claimed({ overlap: "buffer_one" }))).toEqual(["buffered"])
    expect(statusOf(claimed({ overlap: "buffer_one", buffered_for: new Date("2025-06-01T09:59:00Z") })))
      .toEqual(["skipped"])
    expect(statusOf(claimed({ overlap: "skip", running: false }))).toEqual(["pending"])
  })

  it("a due schedule stored with a cron that never matches makes no tick and is due no more; the others go on", () => {
    const stuck = claimed({ id: "00000000-0000-4000-8000-000000000009" as any, cron: "0 0 31 2 *", running: false })
    const fine = claimed({ running: false })
    const decided = decide([stuck, fine], now)
    expect(decided.ticks.map((t) => t.schedule_id)).toEqual([fine.id])
    expect(decided.moves).toEqual([
      { id: stuck.id, next_tick: null, next_run_at: null },
      { id: fine.id, next_tick: new Date("2025-06-01T10:01:00Z"), next_run_at: new Date("2025-06-01T10:01:00Z") }
    ])
  })

  it("claims running 25 s behind an every-second schedule make every tick once, in order, none lost", () => {
    // the claims of a node that was held up (CPU, a slow database): each makes the next tick and leaves the
    // schedule due until it is caught up; a claim at 10:00:25.5 finds 26 ticks due and makes them all
    let s = claimed({ cron: "* * * * * *", overlap: "allow", next_tick: new Date("2025-06-01T10:00:00Z") })
    const made: Array<string> = []
    const at = new Date("2025-06-01T10:00:25.500Z")
    for (let claim = 0; claim < 100 && s.next_run_at !== null && s.next_run_at.getTime() <= at.getTime(); claim++) {
      const decided = decide([s], at)
      for (const t of decided.ticks) {
        expect(t).toMatchObject({ kind: "scheduled", status: "pending" })
        made.push(t.scheduled_for.toISOString().slice(11, 19))
      }
      s = { ...s, next_tick: decided.moves[0]!.next_tick, next_run_at: decided.moves[0]!.next_run_at }
    }
    expect(made).toEqual(Array.from({ length: 26 }, (_, i) => `10:00:${String(i).padStart(2, "0")}`))
    expect(s.next_run_at?.toISOString()).toBe("2025-06-01T10:00:26.000Z")
  })

  it("buffer_one: the waiting run starts once the previous ended, and the schedule is looked at again soon", () => {
    const waiting = claimed({
      overlap: "buffer_one",
      buffered_for: new Date("2025-06-01T09:59:00Z"),
      next_tick: new Date("2025-06-01T10:01:00Z"),
      next_run_at: now
    })
    const ended = decide([{ ...waiting, running: false }], now)
    expect(ended.promoted.map((p) => p.scheduled_for.toISOString())).toEqual(["2025-06-01T09:59:00.000Z"])
    expect(ended.moves[0]!.next_run_at?.toISOString()).toBe("2025-06-01T10:01:00.000Z")
    const still = decide([waiting], now)
    expect(still.promoted).toEqual([])
    expect(still.moves[0]!.next_run_at?.toISOString()).toBe("2025-06-01T10:00:01.200Z")
  })
})

describe("jitter", () => {
  const tick = new Date("2025-06-02T07:00:00Z")
  /** A daily 07:00 schedule with this jitter and window, claimed just after its run's jittered instant. */
  const claimedAtItsRun = (n: number, jitterMs: number, catchupMs: number) => {
    const id = `00000000-0000-4000-8000-${String(n).padStart(12, "0")}` as ClaimedSchedule["id"]
    const runAt = new Date(tick.getTime() + jitterOf(id, tick, jitterMs))
    const s = claimed({
      id,
      cron: "0 7 * * *",
      jitter_ms: jitterMs,
      catchup_window_ms: catchupMs,
      next_tick: tick,
      next_run_at: runAt,
      running: false
    })
    return decide([s], new Date(runAt.getTime() + 200))
  }

  it("a run delayed by its jitter past the catch-up window is made on time, once", () => {
    // jitter 2h, window 1h (the default) or 0s: about half the delays exceed the window, all must run
    for (const catchupMs of [3600_000, 0]) {
      for (let n = 1; n <= 20; n++) {
        const decided = claimedAtItsRun(n, 2 * 3600_000, catchupMs)
        expect(decided.ticks).toEqual([{
          schedule_id: expect.any(String),
          scheduled_for: tick,
          kind: "scheduled",
          status: "pending"
        }])
        expect(decided.moves[0]!.next_tick?.toISOString()).toBe("2025-06-03T07:00:00.000Z")
      }
    }
  })
})

describe("time zone names", () => {
  it("are kept as the IANA database names them now, whatever ICU's older names (Asia/Calcutta, Europe/Kiev)", () => {
    expect(zoneName("europe/berlin")).toBe("Europe/Berlin")
    expect(zoneName("US/Pacific")).toBe("America/Los_Angeles")
    for (
      const [given, named] of [
        ["Asia/Kolkata", "Asia/Kolkata"],
        ["asia/calcutta", "Asia/Kolkata"],
        ["Europe/Kyiv", "Europe/Kyiv"],
        ["Asia/Ho_Chi_Minh", "Asia/Ho_Chi_Minh"],
        ["America/Nuuk", "America/Nuuk"],
        ["Asia/Kathmandu", "Asia/Kathmandu"],
        ["America/Buenos_Aires", "America/Argentina/Buenos_Aires"]
      ]
    ) {
      expect(zoneName(given!)).toBe(named)
      expect(zoneOf(named!)).toBeDefined()
    }
  })
})

describe("the end of the representable years", () => {
  it("no tick after 9999-12-31: a schedule starting at its last day has one run left, not one in year 10000", () => {
    const t = timing({ cron: "0 0 * * *", start_at: new Date("9999-12-31T00:00:00Z") })
    const runs = nextTicks(t, new Date("2026-01-01T00:00:00Z"), 5).map((at) => at.toISOString())
    expect(runs).toEqual(["9999-12-31T00:00:00.000Z"])
  })
})
