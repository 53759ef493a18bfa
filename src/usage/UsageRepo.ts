import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { UsageBucket, UsageDimension } from "../../schema/Usage.js"
import { BUCKETS } from "./DurationHistogram.js"

/** One fact's query: the organization, the range of bucket starts, the filters, and the grouping. */
export interface UsageQuery {
  readonly organizationId: string
  readonly bucket: UsageBucket
  /** The first bucket's start (`from` rounded down to its bucket). */
  readonly from: Date
  /** Buckets that start before it. */
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
 * The grouping read from the rollups and the deltas (by hour): hour rows for hour buckets, day rows otherwise,
 * and the day rows summed over users when the read neither groups nor filters by user (many fewer rows).
 */
const grains = (q: UsageQuery) => {
  const day = q.userId === undefined && !q.groupBy.includes("user") ? "day_all_users" : "day"
  return q.bucket === "hour"
    ? { grain: "hour", rollupBucket: "period", deltaBucket: "period" }
    : q.bucket === "day"
    ? { grain: day, rollupBucket: "period", deltaBucket: truncate("day", "period") }
    : { grain: day, rollupBucket: truncate("month", "period"), deltaBucket: truncate("month", "period") }
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
  const body = (table: string, bucket: string, extra: string) =>
    `SELECT ${bucket} AS bucket${keys}, ${measures[fact]} FROM ${table} WHERE organization_id = $1${extra}${where} ` +
    `GROUP BY ${groupBy}`
  // both parts grouped before their union: the deltas are few, and the rollups' groups merge in the caller
  const text = body(
    `usage_${fact}_rollups`,
    g.rollupBucket,
    ` AND grain = '${g.grain}' AND period >= $2 AND period < $3`
  ) + " UNION ALL " +
    body(`usage_${fact}_deltas`, g.deltaBucket, ` AND ${g.deltaBucket} >= $2 AND ${g.deltaBucket} < $3`)
  return { text, params }
}

// one node folds at a time: two folding at once would only wait on each other's rows
const FOLD_LOCK = 0x5717c4_20
/** Deltas folded per table per statement, at most (a backlog goes in several). */
const FOLD_MAX = 50_000

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

/** The fact's key columns of a delta `t`, its user as the grain's (`g`). */
const keyColumns = (fact: Fact) =>
  KEYS[fact].split(", ").map((k) => k === "user_id" ? "g.user_id" : `t.${k}`).join(", ")

const foldPart = (fact: Fact) => {
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
    ${fact}_taken AS (
      DELETE FROM usage_${fact}_deltas
      WHERE (SELECT held FROM go) AND ctid = ANY(ARRAY(SELECT ctid FROM usage_${fact}_deltas LIMIT ${FOLD_MAX}))
      RETURNING *
    ),
    ${fact}_folded AS (
      INSERT INTO usage_${fact}_rollups AS r (grain, period, ${KEYS[fact]}, ${values.join(", ")})
      SELECT g.grain, g.period, ${keyColumns(fact)}, ${aggregates.join(", ")}
      FROM ${fact}_taken t,
        LATERAL (VALUES ('hour', t.period, t.user_id), ('day', date_trunc('day', t.period, 'UTC'), t.user_id),
          ('day_all_users', date_trunc('day', t.period, 'UTC'), '')) AS g(grain, period, user_id)
      GROUP BY g.grain, g.period, ${keyColumns(fact)}
      ON CONFLICT (organization_id, grain, period, ${KEYS[fact].replace("organization_id, ", "")})
      DO UPDATE SET ${updates.join(", ")}
    )`
}

/** Moves the deltas into the rollups, by hour and by day, in one statement; how many it took. */
const FOLD = `
  WITH go AS (SELECT pg_try_advisory_xact_lock(${FOLD_LOCK}) AS held),
  ${(["model", "task", "connector"] as const).map(foldPart).join(",")}
  SELECT (SELECT held FROM go) AS held,
    greatest((SELECT count(*) FROM model_taken), (SELECT count(*) FROM task_taken),
      (SELECT count(*) FROM connector_taken))::int AS most`

/** The rollups: reads of each fact, and the fold of their deltas. A failed statement is a defect. */
export class UsageRepo extends Effect.Service<UsageRepo>()("usage/UsageRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const read = (fact: Fact, q: UsageQuery) => {
      const { params, text } = factStatement(fact, q)
      return sql.unsafe<FactRow>(text, params).pipe(Effect.orDie)
    }

    /** One fold; `more`: a table had more deltas than one statement takes. */
    const fold = sql.unsafe<{ held: boolean; most: number }>(FOLD).pipe(
      Effect.map(([row]) => ({ held: row?.held === true, more: (row?.most ?? 0) >= FOLD_MAX })),
      Effect.orDie
    )

    return { read, fold } as const
  })
}) {}

/** The stored key for "none" read back as null. */
export const keyOf = (value: unknown): string | null =>
  value === null || value === undefined || value === "" || value === NIL ? null : String(value)
