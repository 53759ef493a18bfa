import { Schema } from "effect"
import { BudgetPeriod } from "./Agents.js"
import { AgentId } from "./Ids.js"
import { DateParam, Timestamp } from "./Timestamp.js"

export const UsageBucket = Schema.Literal("hour", "day", "month").annotations({
  identifier: "UsageBucket",
  description: "The width of a bucket: an hour, a day or a calendar month, in UTC."
})
export type UsageBucket = typeof UsageBucket.Type

/** What `group_by` may name, in the order rows are keyed and CSV columns are written. */
export const USAGE_DIMENSIONS = ["agent", "user", "model", "provider", "connector", "source"] as const
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number]

export const UsageFormat = Schema.Literal("json", "csv")

const groupByDescription = "A comma-separated list of " + USAGE_DIMENSIONS.map((d) => `\`${d}\``).join(", ") +
  ": one row per bucket and combination of these. Without it, one row per bucket."

/** The filters of `GET /v1/usage` and of the `get_usage` MCP tool. */
export const UsageFilters = Schema.Struct({
  from: Schema.optional(DateParam).annotations({
    description: "From this time (its bucket's start, inclusive), ISO 8601. Default: 30 days before `to`."
  }),
  to: Schema.optional(DateParam).annotations({
    description: "Before this time (buckets that start before it), ISO 8601. Default: now."
  }),
  bucket: Schema.optional(UsageBucket).annotations({ description: "`hour`, `day` (default) or `month`, UTC." }),
  group_by: Schema.optional(Schema.String.pipe(Schema.maxLength(200))).annotations({ description: groupByDescription }),
  agent_id: Schema.optional(AgentId).annotations({ description: "Only this agent's usage." }),
  user_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(255))).annotations({
    description: "Only the usage recorded under this person (a task's `input.user.id`). Members: only their own id."
  })
})
export type UsageFilters = typeof UsageFilters.Type

export const UsageParams = Schema.Struct({
  ...UsageFilters.fields,
  format: Schema.optionalWith(UsageFormat, { default: () => "json" as const }).annotations({
    description: "`json` (default) or `csv` (the rows only, as an attachment)."
  })
})

const count = (description: string) => Schema.Int.annotations({ description })

/** One bucket of one group: its keys (the `group_by` dimensions only), then what was used in it. */
export const UsageRow = Schema.Struct({
  bucket_start: Timestamp.annotations({ description: "The bucket's start (UTC)." }),
  agent_id: Schema.optional(Schema.NullOr(Schema.String)),
  user_id: Schema.optional(Schema.NullOr(Schema.String)),
  model: Schema.optional(Schema.NullOr(Schema.String)),
  provider: Schema.optional(Schema.NullOr(Schema.String)),
  connector_id: Schema.optional(Schema.NullOr(Schema.String)),
  source: Schema.optional(Schema.NullOr(Schema.String)),
  model_calls: count("Model calls recorded (`llm_usage` records)."),
  input_tokens: count("Input tokens of those calls."),
  output_tokens: count("Output tokens."),
  cached_tokens: count("Cached input tokens."),
  cost_usd: Schema.Number.annotations({ description: "Their cost in USD, from the price table at the call." }),
  tasks_completed: count("Tasks that ended `completed` in the bucket."),
  tasks_error: count("Tasks that ended `error`."),
  tasks_cancelled: count("Tasks that ended `cancelled`."),
  task_duration_p50_ms: Schema.NullOr(Schema.Number).annotations({
    description: "Median task duration (creation to end) in ms, within 19% (see docs/guides/usage.md); null: no task."
  }),
  task_duration_p95_ms: Schema.NullOr(Schema.Number).annotations({ description: "95th percentile, as p50." }),
  connector_calls_2xx: count("Connector calls answered 2xx (and 1xx)."),
  connector_calls_3xx: count("Answered 3xx."),
  connector_calls_4xx: count("Answered 4xx."),
  connector_calls_5xx: count("Answered 5xx."),
  connector_calls_failed: count("Not answered: refused, timed out, unreachable, or the caller left.")
}).annotations({
  identifier: "UsageRow",
  description: "A dimension absent from `group_by` is absent from the row; null: the usage has no such key " +
    "(a task has no model, a model call no connector)."
})
export type UsageRow = typeof UsageRow.Type

/** The CSV columns, in order: the row's fields (a dimension's column empty when not grouped by it). */
export const USAGE_CSV_COLUMNS = [
  "bucket_start",
  "agent_id",
  "user_id",
  "model",
  "provider",
  "connector_id",
  "source",
  "model_calls",
  "input_tokens",
  "output_tokens",
  "cached_tokens",
  "cost_usd",
  "tasks_completed",
  "tasks_error",
  "tasks_cancelled",
  "task_duration_p50_ms",
  "task_duration_p95_ms",
  "connector_calls_2xx",
  "connector_calls_3xx",
  "connector_calls_4xx",
  "connector_calls_5xx",
  "connector_calls_failed"
] as const satisfies ReadonlyArray<keyof UsageRow>

export const BudgetUse = Schema.Struct({
  agent_id: AgentId,
  agent_name: Schema.String,
  period: BudgetPeriod,
  period_start: Timestamp.annotations({ description: "Start of the current period (UTC; the epoch for `total`)." }),
  limit_usd: Schema.Number,
  spent_usd: Schema.Number.annotations({ description: "Spent in the current period." }),
  exhausted: Schema.Boolean.annotations({ description: "A call was refused for lack of budget in this period." })
}).annotations({ identifier: "BudgetUse", description: "An agent's spend against its budget's cap." })
export type BudgetUse = typeof BudgetUse.Type

export const UsageReport = Schema.Struct({
  from: Timestamp.annotations({ description: "The first bucket's start: `from` rounded down to its bucket." }),
  to: Timestamp,
  bucket: UsageBucket,
  group_by: Schema.Array(Schema.Literal(...USAGE_DIMENSIONS)),
  rows: Schema.Array(UsageRow).annotations({
    description: "Buckets with usage only, oldest first, then by the group's keys."
  }),
  budgets: Schema.Array(BudgetUse).annotations({
    description: "Each budgeted agent you may use (or `agent_id`'s), against its cap for the current period."
  })
}).annotations({ identifier: "UsageReport" })
export type UsageReport = typeof UsageReport.Type
