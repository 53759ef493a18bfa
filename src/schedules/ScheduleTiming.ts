import { Cron, DateTime, Either, Option } from "effect"
import * as Crypto from "node:crypto"
import { DURATION_PATTERN } from "../../schema/Schedules.js"

/**
 * When a schedule runs: pure functions over its timing, the one place both the API (`next_runs`) and the
 * scheduler compute times. Cron expressions are parsed and stepped by Effect's `Cron` (time zones included);
 * what is ours is the rule for the spring-forward gap (below), the macros, and intervals.
 */

export interface Timing {
  readonly cron: Cron.Cron | undefined
  /** The interval in ms (`every`), counted from `anchor`. */
  readonly everyMs: number | undefined
  readonly anchor: Date
  readonly zone: DateTime.TimeZone
  readonly startAt: Date | null
  readonly endAt: Date | null
}

/** The macros of common crons, as the expressions they stand for (`@reboot` has no time, so none). */
const MACROS: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *"
}

/** A tick claimed up to this late is on time, whatever the catch-up window (the scheduler's own lag). */
export const ON_TIME_MS = 30_000

/** The IANA zone, or undefined when the name is none (`Mars/Olympus`). */
export const zoneOf = (name: string): DateTime.TimeZone.Named | undefined =>
  Option.getOrUndefined(DateTime.zoneMakeNamed(name))

/** `Cron.next`, or undefined where it finds no date (it gives up after 10,000 steps, throwing). */
const cronNext = (cron: Cron.Cron, after: Date): Date | undefined => {
  try {
    return Cron.next(cron, after)
  } catch {
    return undefined
  }
}

/**
 * Whether the expression matches any date: one whose days of the month are in none of its months
 * (`0 0 31 2 *`, `0 0 31 4,6 *`) never does. Asked of `Cron.next` itself, so the rule is the one the scheduler
 * steps by; read in UTC, where it steps without zone arithmetic (giving up takes a few ms there, 150 ms in a
 * zone with daylight saving time): which dates exist does not depend on the zone.
 */
const matchesSomeDate = (text: string) =>
  Either.match(Cron.parse(text, "UTC"), {
    onLeft: () => false,
    onRight: (cron) => cronNext(cron, new Date(0)) !== undefined
  })

/** Quartz's `L`, `W`, `?` and `#` (names such as JUL or WED aside), which Effect's `Cron` does not read. */
const quartzOnly = (text: string) => text.split(/\s+/).some((field) => /[LW?#]/i.test(field.replace(/[a-z]{3}/gi, "")))
const QUARTZ_HINT = " (`L`, `W`, `?` and `#` are not supported: use numbers, names, ranges, lists and steps)"

/**
 * The cron expression read in the zone, or what is wrong with it, to follow the quoted expression in a message:
 * every expression accepted has a next date, so stepping one never fails (the rule for every caller).
 */
export const parseCron = (expression: string, zone: DateTime.TimeZone): Either.Either<Cron.Cron, string> => {
  const trimmed = expression.trim()
  const text = trimmed.startsWith("@") ? MACROS[trimmed.toLowerCase()] : trimmed
  if (text === undefined) {
    return Either.left(
      `is not a valid cron expression: unknown macro ${trimmed}; use one of ${Object.keys(MACROS).join(", ")}`
    )
  }
  const cron = Cron.parse(text, zone)
  if (Either.isLeft(cron)) {
    return Either.left(
      `is not a valid cron expression: ${cron.left.message}${quartzOnly(text) ? QUARTZ_HINT : ""}`
    )
  }
  return matchesSomeDate(text)
    ? Either.right(cron.right)
    : Either.left("never matches a date: the days of the month it names are in none of its months (e.g. 31 February)")
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `1h30m` as ms; undefined for anything else. */
export const parseDuration = (text: string): number | undefined => {
  if (!DURATION_PATTERN.test(text)) return undefined
  let total = 0
  for (const [, n, unit] of text.matchAll(/(\d+)(ms|s|m|h|d)/g)) total += Number(n) * UNIT_MS[unit!]!
  return total
}

/** ms as the shortest text `parseDuration` reads back: 5_400_000 is `90m`. */
export const formatDuration = (ms: number): string => {
  for (const unit of ["d", "h", "m", "s"]) {
    if (ms >= UNIT_MS[unit]! && ms % UNIT_MS[unit]! === 0) return `${ms / UNIT_MS[unit]!}${unit}`
  }
  return ms === 0 ? "0s" : `${ms}ms`
}

const offsetAt = (zone: DateTime.TimeZone, at: number) =>
  DateTime.zonedOffset(DateTime.unsafeMakeZoned(at, { timeZone: zone }))

/**
 * The first instant after a spring-forward gap, given an instant just past it: the offset changes between
 * `past - 4h` and `past`; found to the second by halving (zones change offset on whole seconds).
 */
const gapEnd = (zone: DateTime.TimeZone, past: Date): Date => {
  let lo = past.getTime() - 4 * 3_600_000
  let hi = past.getTime()
  const after = offsetAt(zone, hi)
  while (hi - lo > 1000) {
    const mid = lo + Math.floor((hi - lo) / 2)
    if (offsetAt(zone, mid) === after) hi = mid
    else lo = mid
  }
  return new Date(Math.ceil(hi / 1000) * 1000)
}

/**
 * The cron's first time strictly after `after` (undefined where `Cron.next` finds none). The DST rule:
 * - a wall-clock time that does not exist (in a spring-forward gap, e.g. 02:30 in Europe/Berlin on the last
 *   Sunday of March) runs once, at the first instant after the gap (03:00 local);
 * - a wall-clock time that occurs twice (fall-back) runs once, at its first occurrence. This holds for every
 *   expression: `*\/30 * * * *` makes no run in the repeated hour's second pass. For a strict period use `every`.
 * Effect's `Cron.next` moves a time in the gap forward by the gap's length (02:30 to 03:30); such a time no
 * longer matches the expression, which is how it is told apart and moved to the gap's end instead.
 */
const nextCron = (cron: Cron.Cron, zone: DateTime.TimeZone, after: Date): Date | undefined => {
  let from = after
  for (let i = 0; i < 8; i++) {
    const next = cronNext(cron, from)
    if (next === undefined || Cron.match(cron, next)) return next
    const end = gapEnd(zone, next)
    if (end.getTime() > after.getTime()) return end
    from = next
  }
  return cronNext(cron, from)
}

/**
 * The first tick strictly after `after`, ignoring `start_at` and `end_at`; undefined when there is none (a cron
 * `parseCron` refuses, e.g. stored before it did, has no ticks: its schedule never becomes due).
 */
const nextRaw = (timing: Timing, after: Date): Date | undefined => {
  if (timing.cron !== undefined) return nextCron(timing.cron, timing.zone, after)
  const every = timing.everyMs!
  const anchor = timing.anchor.getTime()
  const k = Math.max(0, Math.floor((after.getTime() - anchor) / every) + 1)
  return new Date(anchor + k * every)
}

/** The last instant a timestamp of the API can hold (years 1–9999): no tick comes after it. */
const LAST_INSTANT = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/** The first tick strictly after `after` within `start_at`…`end_at`; undefined when none is left. */
export const nextTick = (timing: Timing, after: Date): Date | undefined => {
  const from = timing.startAt !== null && timing.startAt.getTime() - 1 > after.getTime()
    ? new Date(timing.startAt.getTime() - 1)
    : after
  const next = nextRaw(timing, from)
  const end = Math.min(timing.endAt?.getTime() ?? LAST_INSTANT, LAST_INSTANT)
  return next === undefined || next.getTime() > end ? undefined : next
}

/** The next `count` ticks from the later of `now` and `start_at` (a tick at that instant counts). */
export const nextTicks = (timing: Timing, now: Date, count: number): Array<Date> => {
  const ticks: Array<Date> = []
  let after = new Date(now.getTime() - 1)
  while (ticks.length < count) {
    const next = nextTick(timing, after)
    if (next === undefined) break
    ticks.push(next)
    after = next
  }
  return ticks
}

/** How a tick reads in its zone: ISO 8601 with the offset, e.g. `2026-03-29T03:00:00.000+02:00`. */
export const localIso = (zone: DateTime.TimeZone, at: Date) =>
  DateTime.formatIsoOffset(DateTime.unsafeMakeZoned(at, { timeZone: zone }))

/** A run's delay within the schedule's jitter: fixed per (schedule, tick), so every node computes the same. */
export const jitterOf = (scheduleId: string, tick: Date, jitterMs: number): number => {
  if (jitterMs <= 0) return 0
  const hash = Crypto.createHash("sha256").update(`${scheduleId} ${tick.toISOString()}`).digest()
  return hash.readUInt32BE(0) % (jitterMs + 1)
}

/**
 * The latest tick from `first` (a tick) up to `now`, and the tick after it; found by halving the time between
 * them, never by stepping tick by tick: after a long outage an every-second schedule has millions of ticks in
 * its window, and stepping through them held the scheduler for seconds (and, capped, fired an old one).
 * Invariant: `latest` is a tick at most `now`, and no tick lies in (`hi`, `now`].
 */
const latestUpTo = (timing: Timing, first: Date, now: Date) => {
  let latest = first
  let hi = now.getTime()
  for (;;) {
    const after = nextTick(timing, latest)
    if (after === undefined || after.getTime() > hi) {
      return {
        latest,
        following: after !== undefined && after.getTime() > now.getTime() ? after : nextTick(timing, now)
      }
    }
    const mid = latest.getTime() + Math.floor((hi - latest.getTime()) / 2)
    const probe = nextTick(timing, new Date(mid))
    if (probe !== undefined && probe.getTime() <= hi) latest = probe
    else hi = mid
  }
}

/**
 * The tick to make now, of the ticks due since `next` (the schedule's next tick, which is due), and the next
 * to wait for. `next` at most ON_TIME_MS late is on time: it is made, and the tick after it is next (still due
 * when the scheduler is behind: the next claim makes it; a node held up a few seconds made only the latest of
 * an every-second schedule's ticks, losing the others). Later (downtime): the latest tick up to `now`, if it is
 * at most max(`catchupMs`, ON_TIME_MS) late (the earlier ones are missed: after downtime, a schedule runs once,
 * not once per tick missed), and the tick after `now`.
 */
export const dueTick = (
  timing: Timing,
  next: Date,
  now: Date,
  catchupMs: number
): { readonly fire: Date | undefined; readonly late: boolean; readonly following: Date | undefined } => {
  if (next.getTime() <= now.getTime() && now.getTime() - next.getTime() <= ON_TIME_MS) {
    return { fire: next, late: false, following: nextTick(timing, next) }
  }
  const window = Math.max(catchupMs, ON_TIME_MS)
  const oldest = now.getTime() - window
  const first = next.getTime() >= oldest ? next : nextTick(timing, new Date(oldest - 1))
  if (first === undefined || first.getTime() > now.getTime()) {
    return { fire: undefined, late: false, following: first ?? nextTick(timing, now) }
  }
  const { following, latest } = latestUpTo(timing, first, now)
  return {
    fire: latest,
    late: latest.getTime() !== next.getTime() || now.getTime() - latest.getTime() > ON_TIME_MS,
    following
  }
}
