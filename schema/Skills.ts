import { Schema } from "effect"
import { FunctionId } from "./Functions.js"
import { AgentId, ConnectionId, TaskId, uuidId } from "./Ids.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

export const SkillId = uuidId("SkillId", "a skill", "Identifier of a skill (UUID).")
export type SkillId = typeof SkillId.Type

export const ApprovalId = uuidId("ApprovalId", "an approval request", "Identifier of an approval request (UUID).")
export type ApprovalId = typeof ApprovalId.Type

export const SkillVisibility = Schema.Literal("private", "restricted", "organization").annotations({
  identifier: "SkillVisibility",
  description: "`private`: only agents created by the skill's owner. `restricted`: only the agents on its " +
    "`allowlist`. `organization`: any agent of the organization."
})
export type SkillVisibility = typeof SkillVisibility.Type

export const SkillStatus = Schema.Literal("draft", "published", "archived").annotations({
  description: "`draft` until an Admin publishes it; only `published` skills can be added to agents and run."
})
export type SkillStatus = typeof SkillStatus.Type

export const VisibilityMode = Schema.Literal("off", "report", "enforce")
export type VisibilityMode = typeof VisibilityMode.Type

export const ApprovalCondition = Schema.Struct({
  argument: Schema.String.pipe(Schema.minLength(1)).annotations({
    description: "Dot path into the tool call's arguments, e.g. `body_params.amount`."
  }),
  op: Schema.Literal("gt", "gte", "lt", "lte", "eq", "ne"),
  value: Schema.Union(Schema.Number, Schema.String, Schema.Boolean)
}).annotations({
  identifier: "ApprovalCondition",
  description: "Ask for approval only when this holds for the call's arguments (a missing argument never matches)."
})
export type ApprovalCondition = typeof ApprovalCondition.Type

const requires_approval = Schema.optionalWith(Schema.Boolean, { default: () => false })
const approval_condition = Schema.optional(ApprovalCondition)

export const ConnectorAction = Schema.Struct({
  connection_id: ConnectionId,
  operation_id: Schema.String.pipe(Schema.minLength(1)).annotations({
    description: "The operation's `id` or `operationId`; the tool the model sees is named by its `operationId`."
  }),
  requires_approval,
  approval_condition
}).annotations({ identifier: "ConnectorAction", description: "An operation of a connection, as a tool." })

export const FunctionAction = Schema.Struct({
  function_id: FunctionId.annotations({
    description: "A custom function of the organization; the tool is named after it and runs its current version."
  }),
  requires_approval,
  approval_condition
}).annotations({
  identifier: "FunctionAction",
  description: "A custom function (docs/guides/functions.md), as a tool."
})

export const SkillAction = Schema.Union(ConnectorAction, FunctionAction).annotations({
  identifier: "SkillAction",
  description: "What a skill gives an agent: a connector operation (`connection_id` and `operation_id`) or a custom " +
    "function (`function_id`)."
})
export type SkillAction = typeof SkillAction.Type

/** Whether an action runs a custom function (else it is a connector operation). */
export const isFunctionAction = (a: SkillAction): a is typeof FunctionAction.Type => "function_id" in a

const actions = Schema.Array(SkillAction).pipe(Schema.minItems(1), Schema.maxItems(200))
const name = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
const description = Schema.String.pipe(Schema.maxLength(10_000))

export const CreateSkill = Schema.Struct({
  name,
  description: Schema.optional(description),
  actions,
  visibility: Schema.optionalWith(SkillVisibility, { default: () => "private" as const }),
  allowlist: Schema.optionalWith(Schema.Array(AgentId), { default: () => [] })
}).annotations({ identifier: "CreateSkill", ...requestBody })
export type CreateSkill = typeof CreateSkill.Type

export const UpdateSkill = Schema.Struct({
  name: Schema.optional(name),
  description: Schema.optional(description),
  actions: Schema.optional(actions)
}).annotations({ identifier: "UpdateSkill", ...requestBody })
export type UpdateSkill = typeof UpdateSkill.Type

export const SkillAccess = Schema.Struct({
  visibility: SkillVisibility,
  allowlist: Schema.optionalWith(Schema.Array(AgentId), { default: () => [] })
}).annotations({ identifier: "SkillAccess", ...requestBody })
export type SkillAccess = typeof SkillAccess.Type

export class Skill extends Schema.Class<Skill>("Skill")({
  id: SkillId,
  name: Schema.String,
  description: Schema.String,
  owner_id: Schema.NullOr(Schema.String),
  visibility: SkillVisibility,
  allowlist: Schema.Array(Schema.String),
  status: SkillStatus,
  version: Schema.Int.annotations({ description: "Raised by every change of name, description or actions." }),
  actions: Schema.Array(SkillAction),
  created_at: Timestamp,
  updated_at: Timestamp,
  published_at: Schema.NullOr(Timestamp)
}) {}

export const SkillPage = Schema.Struct({ items: Schema.Array(Skill), next_cursor: Schema.NullOr(Schema.String) })
  .annotations({ identifier: "SkillPage" })

export class AttachedSkill extends Schema.Class<AttachedSkill>("AttachedSkill")({
  skill: Skill,
  attached_at: Timestamp,
  allowed: Schema.Boolean.annotations({
    description: "Whether the skill's visibility admits this agent. Under `enforce` a disallowed skill is not " +
      "given to the agent's runs; under `report` it is, and each use is recorded as a violation."
  })
}) {}

export const SkillViolation = Schema.Struct({
  id: Schema.String,
  skill_id: Schema.String,
  agent_id: Schema.String,
  task_id: Schema.NullOr(Schema.String),
  kind: Schema.Literal("attach", "use"),
  tool: Schema.NullOr(Schema.String),
  mode: VisibilityMode,
  at: Timestamp
}).annotations({ identifier: "SkillViolation" })

export const ManifestUpload = Schema.Struct({
  manifest: Schema.String.pipe(Schema.minLength(1)).annotations({
    description: "The text of `switchyard.yaml` (YAML or JSON)."
  }),
  files: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) })
    .annotations({ description: "Files the manifest refers to (OpenAPI documents), by the path it uses." })
}).annotations({ identifier: "ManifestUpload", ...requestBody })

export const PublishReport = Schema.Struct({
  skills: Schema.Array(Schema.Struct({
    name: Schema.String,
    id: Schema.String,
    outcome: Schema.Literal("created", "updated", "unchanged"),
    status: SkillStatus,
    version: Schema.Int
  })),
  connectors: Schema.Array(Schema.Struct({
    name: Schema.String,
    id: Schema.String,
    outcome: Schema.Literal("created", "updated")
  }))
}).annotations({ identifier: "PublishReport" })

export const ApprovalStatus = Schema.Literal("pending", "approved", "rejected", "expired")

export class Approval extends Schema.Class<Approval>("Approval")({
  id: ApprovalId,
  task_id: Schema.NullOr(TaskId).annotations({
    description: "The asking task; null for a shell command checked outside a task (`kind: command`)."
  }),
  agent_id: Schema.String,
  skill_id: Schema.NullOr(Schema.String),
  tool: Schema.String,
  arguments: Schema.Unknown,
  status: ApprovalStatus,
  kind: Schema.Literal("tool_call", "command").annotations({
    description: "`tool_call`: a run waits to make a tool call. `command`: a coding-agent runtime waits to run a " +
      "shell command (`tool: shell`, `arguments: {command, cwd, commands}`: see the commands guide)."
  }),
  requested_at: Timestamp,
  expires_at: Timestamp,
  decided_at: Schema.NullOr(Timestamp),
  decided_by: Schema.NullOr(Schema.Unknown),
  reason: Schema.NullOr(Schema.String)
}) {}

export const ApprovalPage = Schema.Struct({ items: Schema.Array(Approval), next_cursor: Schema.NullOr(Schema.String) })
  .annotations({ identifier: "ApprovalPage" })

export const Decision = Schema.Struct({
  reason: Schema.optional(Schema.String.pipe(Schema.maxLength(2000)))
}).annotations({ identifier: "Decision", ...requestBody })
