import { Effect } from "effect"
import { BadRequest, Forbidden } from "../../schema/Errors.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import {
  type BudgetUse,
  USAGE_DIMENSIONS,
  type UsageBucket,
  type UsageDimension,
  type UsageFilters,
  type UsageReport,
  type UsageRow
} from "../../schema/Usage.js"
import { AgentRepo, periodStart } from "../agents/AgentRepo.js"
import { requireFilterAgent } from "../agents/Agents.js"
import { rangeForwards } from "../support/TimeRange.js"
import { roundUsd } from "../support/Usd.js"
import { addInto, BUCKETS, quantile } from "./DurationHistogram.js"
import { type FactRow, keyOf, type UsageQuery, UsageRepo } from "./UsageRepo.js"

const DAY_MS = 86_400_000
const DEFAULT_RANGE_MS = 30 * DAY_MS
/** The longest range per bucket width: a report stays a few thousand buckets at most. */
const MAX_RANGE_DAYS: Record<UsageBucket, number> = { hour: 93, day: 1830, month: 36_600 }

/** Midnight UTC of a day; unlike `Date.UTC`, the years 1–99 stay themselves (not 1901–1999). */
const utcDay = (year: number, month: number, day: number) => {
  const date = new Date(0)
  date.setUTCFullYear(year, month, day)
  return date
}

/** The start of the bucket holding `at` (UTC). */
export const bucketStart = (bucket: UsageBucket, at: Date) =>
  bucket === "hour"
    ? new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000)
    : bucket === "day"
    ? utcDay(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate())
    : utcDay(at.getUTCFullYear(), at.getUTCMonth(), 1)

/**
 * The end of the last bucket that starts before `to`: month buckets are read from day rows, which a bare
 * `period < to` would cut at `to`'s day, leaving a partial month under the month's `bucket_start`.
 */
const bucketsEnd = (bucket: UsageBucket, to: Date) => {
  const start = bucketStart(bucket, to)
  if (start.getTime() === to.getTime()) return to
  return bucket === "hour"
    ? new Date(start.getTime() + 3_600_000)
    : bucket === "day"
    ? utcDay(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 1)
    : utcDay(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)
}

const parseGroupBy = (text: string | undefined) => {
  if (text === undefined || text.trim() === "") return Effect.succeed([] as Array<UsageDimension>)
  const names = text.split(",").map((s) => s.trim())
  const unknown = names.filter((n) => !(USAGE_DIMENSIONS as ReadonlyArray<string>).includes(n))
  if (unknown.length > 0) {
    return Effect.fail(BadRequest.of(
      `\`group_by\` names ${unknown.map((n) => `'${n}'`).join(", ")}: use a comma-separated list of ` +
        `${USAGE_DIMENSIONS.join(", ")}.`,
      { unknown },
      "invalid_group_by"
    ))
  }
  // in the contract's order, each once
  return Effect.succeed(USAGE_DIMENSIONS.filter((d) => names.includes(d)))
}

const emptyRow = (bucket: Date): Omit<UsageRow, "task_duration_p50_ms" | "task_duration_p95_ms"> => ({
  bucket_start: bucket,
  model_calls: 0,
  input_tokens: 0,
  output_tokens: 0,
  cached_tokens: 0,
  cost_usd: 0,
  tasks_completed: 0,
  tasks_error: 0,
  tasks_cancelled: 0,
  connector_calls_2xx: 0,
  connector_calls_3xx: 0,
  connector_calls_4xx: 0,
  connector_calls_5xx: 0,
  connector_calls_failed: 0
})

const DIMENSION_FIELDS: Record<UsageDimension, keyof UsageRow> = {
  agent: "agent_id",
  user: "user_id",
  model: "model",
  provider: "provider",
  connector: "connector_id",
  source: "source"
}

const MEASURES = [
  "model_calls",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "cost_usd",
  "tasks_completed",
  "tasks_error",
  "tasks_cancelled",
  "connector_calls_2xx",
  "connector_calls_3xx",
  "connector_calls_4xx",
  "connector_calls_5xx",
  "connector_calls_failed"
] as const

/** The facts' rows as one row per bucket and group; a fact without a grouped dimension has it null. */
export const mergeRows = (groupBy: ReadonlyArray<UsageDimension>, facts: ReadonlyArray<ReadonlyArray<FactRow>>) => {
  const rows = new Map<string, { row: Record<string, any>; histogram: Array<number> }>()
  for (const fact of facts) {
    for (const r of fact) {
      const keys = groupBy.map((d) => keyOf(r[`d_${d}`]))
      const id = JSON.stringify([r.bucket.getTime(), ...keys])
      let entry = rows.get(id)
      if (entry === undefined) {
        const row: Record<string, any> = emptyRow(r.bucket)
        groupBy.forEach((d, i) => row[DIMENSION_FIELDS[d]] = keys[i])
        entry = { row, histogram: new Array<number>(BUCKETS).fill(0) }
        rows.set(id, entry)
      }
      for (const m of MEASURES) if (typeof r[m] === "number") entry.row[m] += r[m]
      if (Array.isArray(r.duration_histogram)) addInto(entry.histogram, r.duration_histogram as Array<number>)
    }
  }
  const out = [...rows.values()].map(({ histogram, row }) =>
    ({
      ...row,
      cost_usd: roundUsd(row.cost_usd),
      task_duration_p50_ms: quantile(histogram, 0.5),
      task_duration_p95_ms: quantile(histogram, 0.95)
    }) as UsageRow
  )
  const sortKey = (row: UsageRow) => groupBy.map((d) => String(row[DIMENSION_FIELDS[d]] ?? "")).join("\u0000")
  return out.sort((a, b) =>
    a.bucket_start.getTime() - b.bucket_start.getTime() ||
    (sortKey(a) < sortKey(b) ? -1 : sortKey(a) > sortKey(b) ? 1 : 0)
  )
}

/**
 * Usage reports (issue 24), read from the rollups (migrations 0020 and 0022), about a second behind the
 * writes (src/usage/UsageFolder.ts). Who sees what: Admins and above the organization's usage; Builders
 * and Members only the usage recorded under themselves (`user_id` is theirs, whether given or not); a key
 * limited to agents only those agents' usage, and never usage outside an agent's tasks (a direct connector
 * call).
 */
export class Usage extends Effect.Service<Usage>()("usage/Usage", {
  effect: Effect.gen(function*() {
    const repo = yield* UsageRepo
    const agents = yield* AgentRepo

    const budgets = (principal: Principal, agentId: string | undefined) =>
      Effect.gen(function*() {
        const listed = yield* agents.list(principal.organizationId, principal.agentIds)
        const budgeted = listed.filter((a) => a.budget !== null && (agentId === undefined || a.id === agentId))
        return yield* Effect.forEach(budgeted, (a) => {
          const budget = a.budget!
          return Effect.map(agents.spending(a.id, budget), (s): BudgetUse => ({
            agent_id: a.id,
            agent_name: a.name,
            period: budget.period,
            period_start: periodStart(budget.period),
            limit_usd: budget.limit_usd,
            spent_usd: roundUsd(s.spent),
            exhausted: s.exhausted
          }))
        }, { concurrency: 4 })
      })

    const report = Effect.fn("Usage.report")(function*(principal: Principal, filters: UsageFilters) {
      const bucket = filters.bucket ?? "day"
      const groupBy = yield* parseGroupBy(filters.group_by)
      const to = filters.to ?? new Date()
      const from = filters.from ?? new Date(to.getTime() - DEFAULT_RANGE_MS)
      yield* rangeForwards(from, to)
      if (to.getTime() - from.getTime() > MAX_RANGE_DAYS[bucket] * DAY_MS) {
        return yield* BadRequest.of(
          `A range of ${bucket} buckets spans at most ${MAX_RANGE_DAYS[bucket]} days; narrow it or use a wider bucket.`,
          undefined,
          "invalid_time_range"
        )
      }
      const admin = holds(principal.role, Policy.readEveryonesUsage)
      if (!admin && filters.user_id !== undefined && filters.user_id !== principal.userId) {
        return yield* Forbidden.of("Below Admin, you see only your own usage: leave out `user_id` or give your own.")
      }
      if (filters.agent_id !== undefined) yield* requireFilterAgent(agents, principal, filters.agent_id)
      const query: UsageQuery = {
        organizationId: principal.organizationId,
        bucket,
        from: bucketStart(bucket, from),
        to: bucketsEnd(bucket, to),
        groupBy,
        agentId: filters.agent_id,
        agentIds: principal.agentIds,
        userId: admin ? filters.user_id : (principal.userId ?? undefined)
      }
      // an organization key below Admin stands for nobody: no usage is its own
      const nobody = !admin && principal.userId === null
      const [facts, budgetUse] = yield* Effect.all([
        nobody
          ? Effect.succeed([])
          : Effect.all([repo.read("model", query), repo.read("task", query), repo.read("connector", query)], {
            concurrency: 3
          }),
        budgets(principal, filters.agent_id)
      ], { concurrency: 2 })
      return {
        from: query.from,
        to,
        bucket,
        group_by: groupBy,
        rows: mergeRows(groupBy, facts),
        budgets: budgetUse
      } satisfies UsageReport
    })

    return { report } as const
  }),
  dependencies: [UsageRepo.Default, AgentRepo.Default]
}) {}
