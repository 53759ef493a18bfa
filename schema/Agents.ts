import { Schema } from "effect"
import { AgentId, ConnectionId, ScheduleId, TaskId } from "./Ids.js"
import { optionalPage, PagedList } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { formatTimestamp, Timestamp } from "./Timestamp.js"

export const ModelProviderName = Schema.Literal("openai", "openai-chat", "anthropic", "scripted").annotations({
  description: "`openai`: OpenAI Responses API. `openai-chat`: any OpenAI-compatible Chat Completions server " +
    "(vLLM, Ollama, llama.cpp, LM Studio, LiteLLM). `anthropic`: Anthropic Messages. `scripted`: replays `script`."
})
export type ModelProviderName = typeof ModelProviderName.Type

export const ScriptTurn = Schema.Union(
  Schema.Struct({
    text: Schema.String.annotations({
      description: "A reply; `{{last_tool_result}}` is replaced by the previous tool result."
    }),
    delay_ms: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 600_000)), { exact: true })
  }),
  Schema.Struct({
    tool_calls: Schema.Array(Schema.Struct({ name: Schema.String, arguments: Schema.Unknown })),
    delay_ms: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 600_000)), { exact: true })
  })
).annotations({ identifier: "ScriptTurn" })
export type ScriptTurn = typeof ScriptTurn.Type

export const ModelConfig = Schema.Struct({
  provider: ModelProviderName,
  name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "Model name, e.g. `gpt-4.1-mini`, `claude-sonnet-4-5`, `llama3.1`."
  }),
  base_url: Schema.optional(Schema.String).annotations({
    description: "Provider endpoint for this agent (default: the organization's or the deployment's)."
  }),
  script: Schema.optional(Schema.Array(ScriptTurn)).annotations({ description: "`scripted` only: the turns to play." }),
  temperature: Schema.optional(Schema.Number.pipe(Schema.between(0, 2))),
  max_output_tokens: Schema.optional(Schema.Int.pipe(Schema.between(1, 200_000)))
}).annotations({ identifier: "ModelConfig" })
export type ModelConfig = typeof ModelConfig.Type

export const AgentSkill = Schema.Struct({
  connection_id: ConnectionId,
  operation_ids: Schema.Array(Schema.String.pipe(Schema.minLength(1))).pipe(
    Schema.minItems(1, { message: () => "must name at least one operation (its `id` or `operationId`)" })
  ).annotations({
    description: "Operations (their `id` or `operationId`); each becomes one tool named by its `operationId`."
  })
}).annotations({ identifier: "AgentSkill" })
export type AgentSkill = typeof AgentSkill.Type

export const BudgetPeriod = Schema.Literal("day", "month", "total")
export const Budget = Schema.Struct({
  limit_usd: Schema.Number.pipe(Schema.positive()),
  period: Schema.optionalWith(BudgetPeriod, { default: () => "total" as const })
}).annotations({ identifier: "Budget", description: "A spend cap in USD per UTC day, calendar month, or in total." })
export type Budget = typeof Budget.Type

/** A budget in words: "$5 per day", "$20 in total". */
export const budgetText = (budget: Budget) =>
  `$${budget.limit_usd} ${budget.period === "total" ? "in total" : `per ${budget.period}`}`

const MaxSteps = Schema.Int.pipe(Schema.between(1, 100))
const MaxTokens = Schema.Int.pipe(Schema.positive())
const TimeoutSeconds = Schema.Int.pipe(Schema.between(1, 86_400))

const limits = {
  max_steps: Schema.optional(MaxSteps).annotations({
    description: "Most model calls in one task (default 10)."
  }),
  max_tokens: Schema.optional(MaxTokens).annotations({
    description: "Most tokens (input + output) one task may use."
  }),
  timeout_seconds: Schema.optional(TimeoutSeconds).annotations({
    description: "Longest a task may run (default SWITCHYARD_TASK_TIMEOUT)."
  })
}

export const CreateAgent = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  instructions: Schema.optional(Schema.String.pipe(Schema.maxLength(100_000))),
  model: ModelConfig,
  skills: Schema.optional(Schema.Array(AgentSkill)),
  budget: Schema.optional(Budget),
  ...limits
}).annotations({ identifier: "CreateAgent", ...requestBody })
export type CreateAgent = typeof CreateAgent.Type

/** A change: a field left out stays; `null` clears a limit or the budget, as a new agent has none. */
export const UpdateAgent = Schema.Struct({
  name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  instructions: Schema.optional(Schema.String.pipe(Schema.maxLength(100_000))),
  model: Schema.optional(ModelConfig),
  skills: Schema.optional(Schema.Array(AgentSkill)),
  budget: Schema.optional(Schema.NullOr(Budget)).annotations({ description: "`null` removes the budget." }),
  max_steps: limits.max_steps,
  max_tokens: Schema.optional(Schema.NullOr(MaxTokens)).annotations({
    description: "Most tokens (input + output) one task may use; `null` removes the limit."
  }),
  timeout_seconds: Schema.optional(Schema.NullOr(TimeoutSeconds)).annotations({
    description: "Longest a task may run; `null` goes back to the default, SWITCHYARD_TASK_TIMEOUT."
  })
}).annotations({ identifier: "UpdateAgent", ...requestBody })
export type UpdateAgent = typeof UpdateAgent.Type

export class Agent extends Schema.Class<Agent>("Agent")({
  id: AgentId,
  name: Schema.String,
  instructions: Schema.String,
  model: ModelConfig,
  skills: Schema.Array(AgentSkill),
  budget: Schema.NullOr(Budget),
  spent_usd: Schema.Number.annotations({ description: "Spent in the current budget period." }),
  max_steps: Schema.Int,
  max_tokens: Schema.NullOr(Schema.Int),
  timeout_seconds: Schema.NullOr(Schema.Int),
  version: Schema.Int.annotations({
    description: "1 when created, one more on each change of configuration. A task runs the version current " +
      "when it was invoked (the task's `agent_version`), also when the agent changes while it runs."
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const AgentList = PagedList(Agent, "AgentList", "agents")

export const AgentListParams = Schema.Struct(optionalPage("Agents", "every agent"))

export const TaskStatus = Schema.Literal(
  "pending",
  "executing",
  "waiting_approval",
  "completed",
  "error",
  "cancelled"
).annotations({
  description: "`pending` → `executing` → `completed` | `error` | `cancelled`. `waiting_approval`: the run is " +
    "paused until a person approves or rejects a tool call (`GET /v1/approvals`); it then goes on `executing`."
})
export type TaskStatus = typeof TaskStatus.Type

/**
 * Why a task ended in `error`, as a stable code a program can branch on (`result` says it for a person).
 * Kept in step with TaskRunner, whose every way of failing a run names one of these.
 */
export const TaskErrorCode = Schema.Literal(
  "model_error",
  "budget_exhausted",
  "max_steps_exceeded",
  "max_tokens_exceeded",
  "no_answer",
  "approval_expired",
  "skill_unavailable",
  "timeout",
  "internal_error"
).annotations({
  identifier: "TaskErrorCode",
  description: "Why the task failed: `model_error` (the model provider's call failed), `budget_exhausted` (the " +
    "agent's budget cannot pay the next model call), `max_steps_exceeded`, `max_tokens_exceeded` (the agent's " +
    "limits), `no_answer` (the model stopped without an answer: its output limit or a refusal), " +
    "`approval_expired` (no decision on a tool call in time), `skill_unavailable` (a skill, function or " +
    "connection the agent needs cannot be used), `timeout` (the run's time limit), `internal_error` (an " +
    "unexpected failure; the node's log says more)."
})
export type TaskErrorCode = typeof TaskErrorCode.Type

export const TaskUser = Schema.Struct({ id: Schema.String, email: Schema.String })

/** Spec 2.6. */
export class Task extends Schema.Class<Task>("Task")({
  id: TaskId,
  agent_id: AgentId,
  agent_version: Schema.NullOr(Schema.Int).annotations({
    description: "The agent's `version` this task runs; null for tasks made before agents had versions."
  }),
  status: TaskStatus,
  result: Schema.NullOr(Schema.String).annotations({ description: "The answer; on `error` the failure details." }),
  error_code: Schema.NullOr(TaskErrorCode).annotations({
    description: "On `error`, why, as a stable code (TaskErrorCode); null otherwise."
  }),
  source: Schema.Literal("api", "mcp", "schedule"),
  schedule_id: Schema.optional(ScheduleId).annotations({
    description: "The schedule that made it (`source: schedule`)."
  }),
  user: TaskUser,
  created_at: Timestamp,
  finished_at: Schema.NullOr(Timestamp)
}) {}

/** A task's fields, as a Task or as a plain object (the fast paths build no Task). */
export type TaskFields = Pick<
  Task,
  | "id"
  | "agent_id"
  | "agent_version"
  | "status"
  | "result"
  | "error_code"
  | "source"
  | "schedule_id"
  | "user"
  | "created_at"
  | "finished_at"
>

/**
 * A task's wire form, built without a pass through Schema for the per-request hot paths (src/http/FastTasks.ts).
 * It is what `Schema.encode(Task)` gives, key order included; test/agents/FastPath.test.ts compares the two.
 */
export const taskJson = (task: TaskFields) => ({
  id: task.id,
  agent_id: task.agent_id,
  agent_version: task.agent_version,
  status: task.status,
  result: task.result,
  error_code: task.error_code,
  source: task.source,
  ...(task.schedule_id === undefined ? {} : { schedule_id: task.schedule_id }),
  user: { id: task.user.id, email: task.user.email },
  created_at: formatTimestamp(task.created_at),
  finished_at: task.finished_at === null ? null : formatTimestamp(task.finished_at)
})

export const InvokeAgent = Schema.Struct({
  input: Schema.Struct({
    text: Schema.String.pipe(Schema.minLength(1, { message: () => "must not be empty: the prompt" })).annotations({
      description: "The prompt."
    }),
    user: Schema.Struct({
      id: Schema.String.pipe(Schema.minLength(1)),
      email: Schema.propertySignature(
        Schema.String.pipe(
          Schema.pattern(/^[^\s@]+@[^\s@]+$/, {
            message: () => "must be the user's e-mail address, like ada@example.com"
          })
        )
      ).annotations({
        missingMessage: () => "is required: the user's e-mail address (a user with only `id` does not work)"
      })
    })
  }),
  user_oidc_token: Schema.optional(Schema.String).annotations({
    description: "The user's OAuth token, for tools that need it. Kept for the run only, never stored."
  })
}).annotations({ identifier: "InvokeAgent", ...requestBody })
export type InvokeAgent = typeof InvokeAgent.Type

export class ThreadEvent extends Schema.Class<ThreadEvent>("ThreadEvent")({
  seq: Schema.Int,
  type: Schema.Literal(
    "user_message",
    "model_call",
    "tool_call",
    "approval_requested",
    "approval_decided",
    "command_check",
    "agent_message",
    "error",
    "cancelled"
  ),
  at: Timestamp,
  user: TaskUser.annotations({ description: "The person who asked." }),
  data: Schema.Unknown.annotations({
    description: "user_message/agent_message: `{text}`. model_call: `{step, provider, model, input_tokens, " +
      "output_tokens, cached_tokens, cost_usd, duration_ms, finish, text, tool_calls}`. tool_call: `{step, name, " +
      "connection_id, operation_id, arguments, status, outcome, result, duration_ms}` (outcome `ok` or `error`; " +
      "`rejected` when a person rejected it; `unknown` when the run making it stopped before its answer was " +
      "recorded: it was not made again). approval_requested: `{approval_id, name, arguments, skill_id}`. approval_decided: " +
      "`{approval_id, status, by, reason}`. command_check (a coding-agent runtime's shell command, judged): " +
      "`{check_id, command, cwd, decision, rule, reason?, approval_id, commands, by}`. error/cancelled: `{message}`."
  })
}) {}

export const Thread = Schema.Struct({ task_id: TaskId, events: Schema.Array(ThreadEvent) }).annotations({
  identifier: "Thread"
})

export const UsageRecord = Schema.Struct({
  seq: Schema.Int,
  at: Timestamp,
  provider: Schema.String,
  model: Schema.String,
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cached_tokens: Schema.Int,
  cost_usd: Schema.Number
})
export const LlmUsage = Schema.Struct({
  task_id: TaskId,
  calls: Schema.Array(UsageRecord),
  totals: Schema.Struct({
    calls: Schema.Int,
    input_tokens: Schema.Int,
    output_tokens: Schema.Int,
    cached_tokens: Schema.Int,
    cost_usd: Schema.Number
  })
}).annotations({ identifier: "LlmUsage" })

export const TaskPage = Schema.Struct({
  items: Schema.Array(Task),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "TaskPage" })

export const SetModelProvider = Schema.Struct({
  api_key: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  base_url: Schema.optional(Schema.String)
}).annotations({ identifier: "SetModelProvider", ...requestBody })

export class ModelProviderSettings extends Schema.Class<ModelProviderSettings>("ModelProviderSettings")({
  provider: Schema.Literal("openai", "openai-chat", "anthropic"),
  base_url: Schema.NullOr(Schema.String),
  has_api_key: Schema.Boolean,
  updated_at: Timestamp
}) {}
