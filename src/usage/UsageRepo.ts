import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { UsageBucket, UsageDimension } from "../../schema/Usage.js"
import { EVENT_ORGANIZATIONS, EventRepo } from "../events/EventRepo.js"
import { BUCKETS } from "./DurationHistogram.js"

/** One fact's query: the organization, the range of bucket starts, the filters, and the grouping. */
export interface UsageQuery {
  readonly organizationId: string
  readonly bucket: UsageBucket
  /** The first bucket's start (`from` rounded down to its bucket). */
  readonly from: Date
  /** The end of the last bucket that starts before the report's `to` (a bucket is read whole). */
  readonly to: Date
  readonly groupBy: ReadonlyArray<UsageDimension>
  readonly agentId: string | undefined
  /** `null`: every agent; otherwise only these. */
  readonly agentIds: ReadonlyArray<string> | null
  readonly userId: string | undefined
}

/** A fact's row: the bucket, the grouped keys (as `d_<dimension>`), and its measures. */
export type FactRow = { readonly bucket: Date } & Record<string, unknown>

type Fact = "model" | "task" | "connector"

const NIL = "00000000-0000-0000-0000-000000000000"

/** Each dimension's column in each fact's tables (absent: the fact has no such key). */
const columns: Record<Fact, Partial<Record<UsageDimension, string>>> = {
  model: { agent: "agent_id", user: "user_id", model: "model", provider: "provider", source: "source" },
  task: { agent: "agent_id", user: "user_id", source: "source" },
  connector: { agent: "agent_id", user: "user_id", connector: "connector_id", source: "source" }
}

const measures: Record<Fact, string> = {
  model: "sum(calls)::float8 AS model_calls, sum(input_tokens)::float8 AS input_tokens, " +
    "sum(output_tokens)::float8 AS output_tokens, sum(cached_tokens)::float8 AS cached_tokens, " +
    "sum(cost_usd)::float8 AS cost_usd",
  task: "sum(completed)::float8 AS tasks_completed, sum(error)::float8 AS tasks_error, " +
    "sum(cancelled)::float8 AS tasks_cancelled, ARRAY[" +
    Array.from({ length: BUCKETS }, (_, i) => `sum(duration_histogram[${i + 1}])`).join(", ") +
    "]::float8[] AS duration_histogram",
  connector: "sum(status_2xx)::float8 AS connector_calls_2xx, sum(status_3xx)::float8 AS connector_calls_3xx, " +
    "sum(status_4xx)::float8 AS connector_calls_4xx, sum(status_5xx)::float8 AS connector_calls_5xx, " +
    "sum(failed)::float8 AS connector_calls_failed"
}

const truncate = (unit: "day" | "month", column: string) => `date_trunc('${unit}', ${column}, 'UTC')`

/**
 * The rollup rows a read takes: hour rows for hour buckets, day rows otherwise, and those summed over users
 * (`hour_all_users`, `day_all_users`) when the read neither groups nor filters by user (many fewer rows).
 */
const grains = (q: UsageQuery) => {
  const allUsers = q.userId === undefined && !q.groupBy.includes("user")
  const day = allUsers ? "day_all_users" : "day"
  return q.bucket === "hour"
    ? { grain: allUsers ? "hour_all_users" : "hour", bucket: "period" }
    : q.bucket === "day"
    ? { grain: day, bucket: "period" }
    : { grain: day, bucket: truncate("month", "period") }
}

/** The SQL of one fact's read, and its parameters. */
export const factStatement = (fact: Fact, q: UsageQuery) => {
  const params: Array<unknown> = [q.organizationId, q.from, q.to]
  const g = grains(q)
  const filters: Array<string> = []
  const param = (value: unknown) => {
    params.push(value)
    return `$${params.length}`
  }
  if (q.agentId !== undefined) filters.push(`agent_id = ${param(q.agentId)}::uuid`)
  if (q.agentIds !== null) filters.push(`agent_id = ANY(${param(q.agentIds)}::uuid[])`)
  if (q.userId !== undefined) filters.push(`user_id = ${param(q.userId)}`)
  const where = filters.map((f) => ` AND ${f}`).join("")
  const dims = q.groupBy.flatMap((d) => {
    const column = columns[fact][d]
    return column === undefined ? [] : [{ d, column }]
  })
  const keys = dims.map(({ column, d }) => `, ${column} AS d_${d}`).join("")
  const groupBy = ["1", ...dims.map((_, i) => String(i + 2))].join(", ")
  const text = `SELECT ${g.bucket} AS bucket${keys}, ${measures[fact]} FROM usage_${fact}_rollups ` +
    `WHERE organization_id = $1 AND grain = '${g.grain}' AND period >= $2 AND period < $3${where} ` +
    `GROUP BY ${groupBy}`
  return { text, params }
}

// one node folds at a time: two folding at once would count the same rows twice
export const FOLD_LOCK = 0x5717c4_20
/** Rows (task ends, model calls, connector calls) folded per source per round, at most (a backlog goes in several). */
const FOLD_MAX = 20_000
/** The events that end a task (migration 0016): one per task, in the transaction that ends it. */
export const TASK_END_EVENTS = ["task.completed", "task.error", "task.cancelled"] as const

const KEYS: Record<Fact, string> = {
  model: "organization_id, agent_id, user_id, source, provider, model",
  task: "organization_id, agent_id, user_id, source",
  connector: "organization_id, connector_id, agent_id, user_id, source"
}
const SUMS: Record<Fact, ReadonlyArray<string>> = {
  model: ["calls", "input_tokens", "output_tokens", "cached_tokens", "cost_usd"],
  task: ["completed", "error", "cancelled", "duration_ms"],
  connector: ["status_2xx", "status_3xx", "status_4xx", "status_5xx", "failed", "duration_ms"]
}
const histogram = (f: (i: number) => string) =>
  `ARRAY[${Array.from({ length: BUCKETS }, (_, i) => f(i + 1)).join(", ")}]::int[]`

/** The fact's key columns of an hour's row `t`, its user as the grain's (`g`). */
const keyColumns = (fact: Fact) =>
  KEYS[fact].split(", ").map((k) => k === "user_id" ? "g.user_id" : `t.${k}`).join(", ")

/** Adds a fact's new rows by hour (`${fact}_hours`) into every grain of its rollups. */
const upsertPart = (fact: Fact) => {
  const values = [...SUMS[fact], ...(fact === "task" ? ["duration_histogram"] : [])]
  const aggregates = [
    ...SUMS[fact].map((c) => `sum(${c})`),
    ...(fact === "task" ? [histogram((i) => `sum(duration_histogram[${i}])`)] : [])
  ]
  const updates = [
    ...SUMS[fact].map((c) => `${c} = r.${c} + excluded.${c}`),
    ...(fact === "task"
      ? [`duration_histogram = ${histogram((i) => `r.duration_histogram[${i}] + excluded.duration_histogram[${i}]`)}`]
      : [])
  ]
  return `
    ${fact}_folded AS (
      INSERT INTO usage_${fact}_rollups AS r (grain, period, ${KEYS[fact]}, ${values.join(", ")})
      SELECT g.grain, g.period, ${keyColumns(fact)}, ${aggregates.join(", ")}
      FROM ${fact}_hours t,
        LATERAL (VALUES ('hour', t.period, t.user_id), ('hour_all_users', t.period, ''),
          ('day', date_trunc('day', t.period, 'UTC'), t.user_id),
          ('day_all_users', date_trunc('day', t.period, 'UTC'), '')) AS g(grain, period, user_id)
      GROUP BY g.grain, g.period, ${keyColumns(fact)}
      ON CONFLICT (organization_id, grain, period, ${KEYS[fact].replace("organization_id, ", "")})
      DO UPDATE SET ${updates.join(", ")}
    )`
}

/**
 * One round of the fold, in one statement, under the fold's lock (its transaction's). Its parameters: the
 * task ends read from the event log ($1 task ids, $2 statuses, $3 finished_at, $4 organizations, $5
 * agents) and the log's next position ($6); the positions in `llm_usage` ($7 xid, $8 task, $9 seq) and
 * `connector_invocations` ($10 xid, $11 id). The model and connector calls are read here: committed rows
 * only (xid below the snapshot's xmin: no transaction below it can still add a row), in (xid, key) order,
 * after the position, at most FOLD_MAX. The tasks are joined for who asked and how (user, source), and
 * when the task was created (its duration); calls outside a task have none.
 */
const FOLD = `
  WITH ends AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::uuid[], $5::uuid[])
      AS e(task_id, status, finished_at, organization_id, agent_id)
  ),
  task_hours AS (
    SELECT date_trunc('hour', x.finished_at, 'UTC') AS period, e.organization_id,
      coalesce(t.agent_id, e.agent_id) AS agent_id, coalesce(t.user_id, '') AS user_id,
      coalesce(t.source, '') AS source,
      count(*) FILTER (WHERE e.status = 'completed') AS completed, count(*) FILTER (WHERE e.status = 'error') AS error,
      count(*) FILTER (WHERE e.status = 'cancelled') AS cancelled, coalesce(sum(d.ms), 0) AS duration_ms,
      ${histogram((i) => `count(*) FILTER (WHERE d.bucket = ${i})`)} AS duration_histogram
    FROM ends e LEFT JOIN tasks t ON t.id = e.task_id,
      LATERAL (SELECT coalesce(t.finished_at, e.finished_at) AS finished_at) x,
      LATERAL (
        SELECT greatest(0, extract(epoch FROM x.finished_at - coalesce(t.created_at, x.finished_at)) * 1000)::float8 AS ms
      ) d0,
      LATERAL (SELECT d0.ms, usage_duration_bucket(d0.ms) AS bucket) d
    GROUP BY 1, 2, 3, 4, 5
  ),
  model_new AS (
    SELECT * FROM llm_usage
    WHERE xid > '0'::xid8 AND (xid, task_id, seq) > ($7::xid8, $8::uuid, $9::int)
      AND xid < (SELECT pg_snapshot_xmin(pg_current_snapshot()))
    ORDER BY xid, task_id, seq LIMIT ${FOLD_MAX}
  ),
  model_hours AS (
    SELECT date_trunc('hour', u.at, 'UTC') AS period, u.organization_id, u.agent_id, coalesce(t.user_id, '') AS user_id,
      coalesce(t.source, '') AS source, u.provider, u.model, count(*) AS calls, sum(u.input_tokens) AS input_tokens,
      sum(u.output_tokens) AS output_tokens, sum(u.cached_tokens) AS cached_tokens, sum(u.cost_usd) AS cost_usd
    FROM model_new u LEFT JOIN tasks t ON t.id = u.task_id
    GROUP BY 1, 2, 3, 4, 5, 6, 7
  ),
  connector_new AS (
    SELECT * FROM connector_invocations
    WHERE xid > '0'::xid8 AND (xid, id) > ($10::xid8, $11::bigint)
      AND xid < (SELECT pg_snapshot_xmin(pg_current_snapshot()))
    ORDER BY xid, id LIMIT ${FOLD_MAX}
  ),
  connector_hours AS (
    SELECT date_trunc('hour', c.created_at, 'UTC') AS period, c.organization_id, c.connector_id,
      coalesce(t.agent_id, '${NIL}'::uuid) AS agent_id, coalesce(t.user_id, c.user_id::text, '') AS user_id,
      coalesce(t.source, '') AS source,
      count(*) FILTER (WHERE c.status < 300) AS status_2xx, count(*) FILTER (WHERE c.status BETWEEN 300 AND 399) AS status_3xx,
      count(*) FILTER (WHERE c.status BETWEEN 400 AND 499) AS status_4xx,
      count(*) FILTER (WHERE c.status >= 500) AS status_5xx, count(*) FILTER (WHERE c.status IS NULL) AS failed,
      coalesce(sum(c.duration_ms), 0) AS duration_ms
    FROM connector_new c LEFT JOIN tasks t ON t.id = usage_task_uuid(c.task_id)
    GROUP BY 1, 2, 3, 4, 5, 6
  ),
  ${(["model", "task", "connector"] as const).map(upsertPart).join(",")},
  model_last AS (SELECT xid, task_id, seq FROM model_new ORDER BY xid DESC, task_id DESC, seq DESC LIMIT 1),
  connector_last AS (SELECT xid, id FROM connector_new ORDER BY xid DESC, id DESC LIMIT 1),
  moved AS (
    UPDATE usage_fold_positions SET events_after = greatest(events_after, $6::bigint),
      model_xid = coalesce((SELECT xid FROM model_last), model_xid),
      model_task_id = coalesce((SELECT task_id FROM model_last), model_task_id),
      model_seq = coalesce((SELECT seq FROM model_last), model_seq),
      connector_xid = coalesce((SELECT xid FROM connector_last), connector_xid),
      connector_id = coalesce((SELECT id FROM connector_last), connector_id),
      folded_at = now()
    WHERE id = 1
  )
  SELECT (SELECT count(*) FROM model_new)::int AS models, (SELECT count(*) FROM connector_new)::int AS connectors`

/**
 * Whether a round of the fold would find anything: an event after the log's position (each organization's
 * first, by its primary key, as the log's reads skip from organization to organization) or pruned past it, or
 * a model or connector call after theirs. A hint, read without the lock: a round it skips is the next one's, a second
 * later. An idle node asks this once a second instead of running a round (six statements, one of them the
 * fold's).
 */
const FOLD_DUE = `
  WITH RECURSIVE ${EVENT_ORGANIZATIONS}
  SELECT EXISTS (
      SELECT 1 FROM orgs
      WHERE orgs.id IS NOT NULL
        AND EXISTS (SELECT 1 FROM events e WHERE e.organization_id = orgs.id AND e.id > p.events_after)
    )
    -- events pruned past the position: the round says what the rollups miss
    OR EXISTS (SELECT 1 FROM event_horizons h WHERE h.pruned_through > p.events_after)
    OR EXISTS (SELECT 1 FROM llm_usage u WHERE u.xid > '0'::xid8
      AND (u.xid, u.task_id, u.seq) > (p.model_xid, p.model_task_id, p.model_seq))
    OR EXISTS (SELECT 1 FROM connector_invocations c WHERE c.xid > '0'::xid8
      AND (c.xid, c.id) > (p.connector_xid, p.connector_id)) AS due
  FROM usage_fold_positions p WHERE p.id = 1`

/** A mark of "now" ($1 of FOLDED_THROUGH): the next transaction id; what committed before is below it. */
export const FOLD_MARK = "SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS mark"

/**
 * Whether everything committed below the mark $1 is in the rollups: the log's position past it, and no
 * model or connector call below it after their positions. For callers that must read their own writes
 * (tests, the bench): cheap, poll it.
 */
export const FOLDED_THROUGH = `
  SELECT (p.events_after >= ($1::text::bigint << 20) - 1)
    AND NOT EXISTS (SELECT 1 FROM llm_usage u WHERE u.xid > '0'::xid8 AND u.xid < $1::text::xid8
      AND (u.xid, u.task_id, u.seq) > (p.model_xid, p.model_task_id, p.model_seq))
    AND NOT EXISTS (SELECT 1 FROM connector_invocations c WHERE c.xid > '0'::xid8 AND c.xid < $1::text::xid8
      AND (c.xid, c.id) > (p.connector_xid, p.connector_id)) AS done
  FROM usage_fold_positions p WHERE p.id = 1`

interface Positions {
  readonly events_after: string
  readonly events_uncounted_below: string
  readonly events_uncounted: ReadonlyArray<string>
  readonly model_xid: string
  readonly model_task_id: string
  readonly model_seq: number
  readonly connector_xid: string
  readonly connector_id: string
}

/** A round of the fold: whether this node held the lock, and whether a source had more than a round takes. */
export interface FoldRound {
  readonly held: boolean
  readonly more: boolean
  readonly tasks: number
  readonly models: number
  readonly connectors: number
}

/** The rollups: reads of each fact, and the fold into them. A failed statement is a defect. */
export class UsageRepo extends Effect.Service<UsageRepo>()("usage/UsageRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventRepo

    const read = (fact: Fact, q: UsageQuery) => {
      const { params, text } = factStatement(fact, q)
      return sql.unsafe<FactRow>(text, params).pipe(Effect.orDie)
    }

    /**
     * One round: under the fold's lock (one node at a time, cluster-wide), the task ends the event log
     * committed after the stored position, and the model and connector calls committed after theirs, are
     * added to the rollups and the positions moved, in one transaction: nothing is skipped or counted twice.
     */
    const fold: Effect.Effect<FoldRound> = sql.withTransaction(Effect.gen(function*() {
      const [lock] = yield* sql<{ held: boolean }>`SELECT pg_try_advisory_xact_lock(${FOLD_LOCK}) AS held`
      if (lock?.held !== true) return { held: false, more: false, tasks: 0, models: 0, connectors: 0 }
      const [p] = yield* sql<Positions>`
        SELECT events_after::text, events_uncounted_below::text, events_uncounted::text[], model_xid::text,
          model_task_id::text, model_seq, connector_xid::text, connector_id::text
        FROM usage_fold_positions WHERE id = 1`
      const after = BigInt(p!.events_after)
      const page = yield* events.readAcross(after, FOLD_MAX, TASK_END_EVENTS)
      if (page.horizon > after) {
        yield* Effect.logWarning(
          `usage: task ends after event ${after} were pruned from the event log before they were folded ` +
            `(through ${page.horizon}); they are missing from the usage rollups`
        )
      }
      // the hand-over from 0020's triggers (migration 0022): below this, only the transactions listed
      const uncountedBelow = BigInt(p!.events_uncounted_below)
      const uncounted = new Set(p!.events_uncounted)
      const ends = page.events.filter((e) => e.id >= uncountedBelow || uncounted.has((e.id >> 20n).toString()))
      const finishedAt = ends.map((e) => (JSON.parse(e.json) as { data: { finished_at?: string } }).data.finished_at)
      const [row] = yield* sql.unsafe<{ models: number; connectors: number }>(FOLD, [
        ends.map((e) => e.taskId),
        ends.map((e) => e.type.slice("task.".length)),
        finishedAt,
        ends.map((e) => e.organizationId),
        ends.map((e) => e.agentId),
        page.next.toString(),
        p!.model_xid,
        p!.model_task_id,
        p!.model_seq,
        p!.connector_xid,
        p!.connector_id
      ])
      const models = row?.models ?? 0
      const connectors = row?.connectors ?? 0
      return {
        held: true,
        more: page.full || models >= FOLD_MAX || connectors >= FOLD_MAX,
        tasks: ends.length,
        models,
        connectors
      }
    })).pipe(Effect.orDie)

    /** Whether a round would find anything to fold (FOLD_DUE): a hint, without the lock. */
    const due: Effect.Effect<boolean> = sql.unsafe<{ due: boolean }>(FOLD_DUE).pipe(
      Effect.map(([r]) => r?.due === true),
      Effect.orDie
    )

    /** Whether everything committed before `mark` is folded (FOLDED_THROUGH). */
    const foldedThrough = (mark: string) =>
      sql.unsafe<{ done: boolean }>(FOLDED_THROUGH, [mark]).pipe(Effect.map(([r]) => r?.done === true), Effect.orDie)

    /** A mark of "now": what committed before this call is below it. */
    const mark = sql.unsafe<{ mark: string }>(FOLD_MARK).pipe(Effect.map(([r]) => r!.mark), Effect.orDie)

    return { read, fold, due, foldedThrough, mark } as const
  }),
  dependencies: [EventRepo.Default]
}) {}

/** The stored key for "none" read back as null. */
export const keyOf = (value: unknown): string | null =>
  value === null || value === undefined || value === "" || value === NIL ? null : String(value)
