import { Schema } from "effect"
import { TaskErrorCode, TaskUser } from "./Agents.js"
import { Timestamp } from "./Timestamp.js"

/**
 * A thread event's `data` by its `type`, for the OpenAPI document: `ThreadEvent` carries `data` as
 * `unknown` (the run records it as JSON), and `documentApi` documents it as one of these, told apart by
 * `type`. Fields a run adds later come as further keys.
 */
const open = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const data = <F extends Schema.Struct.Fields>(identifier: string, description: string, fields: F) =>
  Schema.Struct(fields, open).annotations({ identifier, description })
const nullable = <S extends Schema.Schema.Any>(s: S) => Schema.optional(Schema.NullOr(s))

export const ThreadMessageData = data("ThreadMessageData", "user_message, agent_message: the text.", {
  text: Schema.String,
  truncated: Schema.optional(Schema.Boolean).annotations({
    description: "agent_message: `true` when the model's output limit cut the answer off (its model_call's " +
      "`finish` is `length`); raise the agent's `model.max_output_tokens` for the rest."
  })
})
export const ThreadModelCallData = data("ThreadModelCallData", "model_call: one call of the model and its answer.", {
  step: nullable(Schema.Number),
  provider: nullable(Schema.String),
  model: nullable(Schema.String),
  input_tokens: nullable(Schema.Number),
  output_tokens: nullable(Schema.Number),
  cached_tokens: nullable(Schema.Number),
  cost_usd: nullable(Schema.Number),
  duration_ms: nullable(Schema.Number),
  finish: nullable(Schema.String),
  usage_estimated: Schema.optional(Schema.Boolean).annotations({
    description: "`true` when the server reported no usage: the tokens (and cost) are estimated at 4 characters " +
      "a token."
  }),
  text: nullable(Schema.String),
  tool_calls: Schema.optional(Schema.Array(Schema.Unknown))
})
export const ThreadToolCallData = data("ThreadToolCallData", "tool_call: one tool call and its result.", {
  step: nullable(Schema.Number),
  name: nullable(Schema.String),
  connection_id: nullable(Schema.String),
  operation_id: nullable(Schema.String),
  function_id: nullable(Schema.String).annotations({ description: "The custom function a skill action ran." }),
  arguments: Schema.optional(Schema.Unknown),
  status: nullable(Schema.Number).annotations({ description: "The upstream HTTP status, if a call was made." }),
  outcome: nullable(Schema.String).annotations({ description: "`rejected` when a person rejected the call." }),
  result: nullable(Schema.String),
  duration_ms: nullable(Schema.Number)
})
export const ThreadApprovalRequestedData = data(
  "ThreadApprovalRequestedData",
  "approval_requested: a tool call waits for a person's decision.",
  {
    approval_id: Schema.String,
    name: nullable(Schema.String),
    arguments: Schema.optional(Schema.Unknown),
    skill_id: nullable(Schema.String)
  }
)
export const ThreadApprovalDecidedData = data(
  "ThreadApprovalDecidedData",
  "approval_decided: the decision on a tool call.",
  {
    approval_id: Schema.String,
    status: Schema.String,
    by: Schema.optional(Schema.Unknown),
    reason: nullable(Schema.String)
  }
)
export const ThreadCommandCheckData = data(
  "ThreadCommandCheckData",
  "command_check: a shell command a coding-agent runtime checked against the agent's command policy.",
  {
    check_id: Schema.String,
    command: Schema.String,
    cwd: nullable(Schema.String),
    decision: Schema.Literal("allow", "deny", "pending"),
    rule: nullable(Schema.String),
    reason: Schema.optional(Schema.String),
    approval_id: nullable(Schema.String),
    commands: Schema.Array(Schema.Unknown),
    by: Schema.optional(Schema.Unknown)
  }
)
export const ThreadEndData = data("ThreadEndData", "error, cancelled: why the task ended.", {
  message: Schema.NullOr(Schema.String),
  code: Schema.optional(TaskErrorCode).annotations({ description: "error: the task's `error_code`." })
})

const variant = <T extends string, D extends Schema.Schema.Any>(identifier: string, types: ReadonlyArray<T>, d: D) =>
  Schema.Struct({
    seq: Schema.Int,
    type: Schema.Literal(...types),
    at: Timestamp,
    user: TaskUser.annotations({ description: "The person who asked." }),
    data: d
  }).annotations({ identifier })

/** The documented `ThreadEvent`: one variant per kind of `data`. */
export const ThreadEventDoc = Schema.Union(
  variant("ThreadMessageEvent", ["user_message", "agent_message"], ThreadMessageData),
  variant("ThreadModelCallEvent", ["model_call"], ThreadModelCallData),
  variant("ThreadToolCallEvent", ["tool_call"], ThreadToolCallData),
  variant("ThreadApprovalRequestedEvent", ["approval_requested"], ThreadApprovalRequestedData),
  variant("ThreadApprovalDecidedEvent", ["approval_decided"], ThreadApprovalDecidedData),
  variant("ThreadCommandCheckEvent", ["command_check"], ThreadCommandCheckData),
  variant("ThreadEndEvent", ["error", "cancelled"], ThreadEndData)
).annotations({ description: "One step of a task's thread; `data` by `type`." })
