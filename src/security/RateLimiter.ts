import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"

/** At most `max` counted attempts per `window` for each subject; `max` 0 turns the limit off. */
export interface RateLimit {
  /** The counter's name, the prefix of its subjects' keys: `api_key`, `password_ip`, … */
  readonly name: string
  readonly max: number
  readonly window: Duration.Duration
}

/** One subject under one limit: an API key id, an e-mail address's hash, a source address. */
export interface Subject {
  readonly limit: RateLimit
  readonly subject: string
}

/** A subject's count in its current window, this attempt included. */
export interface Tally extends Subject {
  readonly count: number
  /** Whole seconds until the window ends (at least 1): the `Retry-After`. */
  readonly retryAfter: number
}

/** Over the limit: this attempt is refused. */
export const isOver = (t: Tally) => t.count > t.limit.max
/** The first refused attempt of its window: the one that is audited or logged. */
export const isFirstRefusal = (t: Tally) => t.count === t.limit.max + 1

const keyOf = (s: Subject) => `${s.limit.name}:${s.subject}`
const secondsUntil = (until: number) => Math.max(1, Math.ceil((until - Date.now()) / 1000))

const PRUNE_EVERY = Duration.minutes(1)
const REMEMBERED_MAX = 10_000

/**
 * Counters that hold across every node: one PostgreSQL row per subject (`rate_limit_buckets`), bumped in
 * one statement per attempt (several subjects at once). A subject's window opens at its first counted
 * attempt and lasts the limit's window; the database's clock decides, so nodes with skewed clocks agree.
 * A node remembers the subjects it saw refused until their window ends and refuses them again without a
 * round trip, so a flood costs the database one write per node per window once it is over the limit.
 * Only what the callers count touches this: a correct API key never does.
 *
 * When the database cannot count, the attempt is let through (logged): the limits guard against
 * guessing and floods, and refusing every sign-in while PostgreSQL is away would add an outage to one.
 */
export class RateLimiter extends Effect.Service<RateLimiter>()("security/RateLimiter", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const refused = new Map<string, { readonly until: number; readonly count: number }>()

    const remember = (t: Tally) => {
      if (!isOver(t)) return
      if (refused.size >= REMEMBERED_MAX) {
        const now = Date.now()
        for (const [key, entry] of refused) if (entry.until <= now) refused.delete(key)
        if (refused.size >= REMEMBERED_MAX) refused.delete(refused.keys().next().value!)
      }
      refused.set(keyOf(t), { until: Date.now() + t.retryAfter * 1000, count: t.count })
    }

    const active = (subjects: ReadonlyArray<Subject>) => subjects.filter((s) => s.limit.max > 0)

    /** A subject this node saw refused and whose window has not ended: refuse it again without counting. */
    const refusedHere = (subjects: ReadonlyArray<Subject>): Tally | undefined => {
      const now = Date.now()
      for (const s of active(subjects)) {
        const entry = refused.get(keyOf(s))
        if (entry === undefined) continue
        if (entry.until <= now) refused.delete(keyOf(s))
        else return { ...s, count: entry.count, retryAfter: secondsUntil(entry.until) }
      }
      return undefined
    }

    /** Counts one attempt for each subject and returns their tallies (over a limit: refuse the attempt). */
    const count = Effect.fn("RateLimiter.count")(function*(subjects: ReadonlyArray<Subject>) {
      const counted = active(subjects)
      if (counted.length === 0) return []
      // one row per key, in key order: two attempts counting the same subjects lock them in the same order
      const rows = counted.map((s) => ({ key: keyOf(s), seconds: Duration.toSeconds(s.limit.window) }))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      const result = yield* sql<{ key: string; count: number; remaining: number }>`
        INSERT INTO rate_limit_buckets AS b (key, window_start, expires_at, count)
        SELECT t.key, now(), now() + make_interval(secs => t.seconds), 1
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS t(key text, seconds float8)
        ORDER BY t.key
        ON CONFLICT (key) DO UPDATE SET
          count = CASE WHEN b.expires_at <= now() THEN 1 ELSE b.count + 1 END,
          window_start = CASE WHEN b.expires_at <= now() THEN now() ELSE b.window_start END,
          expires_at = CASE WHEN b.expires_at <= now() THEN excluded.expires_at ELSE b.expires_at END
        RETURNING key, count, extract(epoch FROM expires_at - now())::float8 AS remaining`.pipe(
        Effect.catchAll((e) => Effect.as(Effect.logWarning("rate limits not counted", e), []))
      )
      const byKey = new Map(result.map((r) => [r.key, r]))
      const tallies: Array<Tally> = []
      for (const s of counted) {
        const row = byKey.get(keyOf(s))
        if (row === undefined) continue
        const tally = { ...s, count: row.count, retryAfter: Math.max(1, Math.ceil(row.remaining)) }
        remember(tally)
        tallies.push(tally)
      }
      return tallies
    })

    /** Takes back one counted attempt (one that turned out not to count, like a correct password). */
    const release = Effect.fn("RateLimiter.release")(function*(subject: Subject) {
      if (subject.limit.max === 0) return
      yield* sql`
        UPDATE rate_limit_buckets SET count = greatest(count - 1, 0)
        WHERE key = ${keyOf(subject)} AND expires_at > now()`.pipe(Effect.ignoreLogged)
    })

    /** Forgets a subject's window, on every node at its next count (on this one at once). */
    const reset = Effect.fn("RateLimiter.reset")(function*(subject: Subject) {
      refused.delete(keyOf(subject))
      if (subject.limit.max === 0) return
      yield* sql`DELETE FROM rate_limit_buckets WHERE key = ${keyOf(subject)}`.pipe(Effect.ignoreLogged)
    })

    // ended windows are only read to be restarted: every node drops them now and then
    yield* Effect.sleep(PRUNE_EVERY).pipe(
      Effect.zipRight(sql`DELETE FROM rate_limit_buckets WHERE expires_at < now()`.pipe(Effect.ignoreLogged)),
      Effect.forever,
      Effect.forkScoped
    )

    return { count, refusedHere, release, reset } as const
  })
}) {}
