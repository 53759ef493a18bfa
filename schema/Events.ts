import { Schema } from "effect"
import { TaskErrorCode } from "./Agents.js"
import { AuditEvent } from "./Audit.js"
import { AgentId, ConnectionId, ConnectorId, TaskId } from "./Ids.js"
import { Timestamp } from "./Timestamp.js"

/**
 * The event log's shapes (issue 22): what `GET /v1/events` and `GET /v1/tasks/{id}/events` send as each
 * server-sent event's `data:`, and what webhooks deliver. The database writes them (src/db/migrations/
 * 0016_events.ts); these schemas are their contract, and a test decodes every event it sees with them.
 */

export const EventId = Schema.String.pipe(Schema.pattern(/^(0|[1-9][0-9]{0,18})$/)).annotations({
  identifier: "EventId",
  description: "An event's id: a decimal integer (as a string) that increases in the order readers receive " +
    "events. Resume after it with `Last-Event-ID`; `0` means from the oldest event kept."
})

export const eventTypes = [
  "task.created",
  "task.started",
  "task.tool_call",
  "task.model_call",
  "task.waiting_approval",
  "task.completed",
  "task.error",
  "task.cancelled",
  "approval.requested",
  "approval.decided",
  "connection.needs_reauthentication",
  "audit.recorded"
] as const
export const EventType = Schema.Literal(...eventTypes).annotations({ identifier: "EventType" })
export type EventType = typeof EventType.Type

/** The events that end a task: its stream ends after one. */
export const taskEndTypes: ReadonlySet<string> = new Set(["task.completed", "task.error", "task.cancelled"])

const task = {
  task_id: TaskId,
  agent_id: AgentId
}

export const TaskCreatedData = Schema.Struct({
  ...task,
  agent_version: Schema.NullOr(Schema.Int),
  source: Schema.Literal("api", "mcp"),
  user_id: Schema.String.annotations({ description: "The end user the task was invoked for (`input.user.id`)." }),
  created_at: Timestamp
}).annotations({ identifier: "TaskCreatedData" })

export const TaskStatusData = Schema.Struct({
  ...task,
  status: Schema.Literal("executing", "waiting_approval")
}).annotations({ identifier: "TaskStatusData" })

export const TaskEndedData = Schema.Struct({
  ...task,
  status: Schema.Literal("completed", "error", "cancelled"),
  result: Schema.NullOr(Schema.String).annotations({
    description: "The answer or the error, its first 4096 characters; the task (GET /v1/tasks/{id}) has it whole."
  }),
  result_truncated: Schema.Boolean,
  error_code: Schema.optional(Schema.NullOr(TaskErrorCode)).annotations({
    description: "task.error: why, as the task's `error_code`; null for the other ends."
  }),
  finished_at: Timestamp
}).annotations({ identifier: "TaskEndedData" })

export const TaskToolCallData = Schema.Struct({
  ...task,
  step: Schema.NullOr(Schema.Int),
  name: Schema.NullOr(Schema.String),
  connection_id: Schema.NullOr(Schema.String),
  operation_id: Schema.NullOr(Schema.String),
  outcome: Schema.NullOr(Schema.String).annotations({
    description: "ok, error, rejected (by a reviewer), or unknown (its run stopped while making it; not made again)."
  }),
  status: Schema.NullOr(Schema.Int).annotations({ description: "The upstream HTTP status, if a call was made." }),
  duration_ms: Schema.NullOr(Schema.Number)
}).annotations({
  identifier: "TaskToolCallData",
  description: "A tool call of the run; its arguments and result are in the task's thread."
})

export const TaskModelCallData = Schema.Struct({
  ...task,
  step: Schema.NullOr(Schema.Int),
  provider: Schema.NullOr(Schema.String),
  model: Schema.NullOr(Schema.String),
  input_tokens: Schema.NullOr(Schema.Int),
  output_tokens: Schema.NullOr(Schema.Int),
  cached_tokens: Schema.NullOr(Schema.Int),
  cost_usd: Schema.NullOr(Schema.Number),
  duration_ms: Schema.NullOr(Schema.Number),
  finish: Schema.NullOr(Schema.String)
}).annotations({
  identifier: "TaskModelCallData",
  description: "A model call of the run; its text is in the task's thread."
})

const approvalTask = {
  ...task,
  task_id: Schema.NullOr(TaskId).annotations({ description: "Null for a shell command checked outside a task." })
}

export const ApprovalRequestedData = Schema.Struct({
  approval_id: Schema.UUID,
  ...approvalTask,
  tool: Schema.String,
  skill_id: Schema.NullOr(Schema.UUID),
  requested_at: Timestamp,
  expires_at: Timestamp
}).annotations({ identifier: "ApprovalRequestedData" })

export const ApprovalDecidedData = Schema.Struct({
  approval_id: Schema.UUID,
  ...approvalTask,
  tool: Schema.String,
  status: Schema.Literal("approved", "rejected", "expired"),
  reason: Schema.NullOr(Schema.String),
  decided_at: Timestamp
}).annotations({ identifier: "ApprovalDecidedData" })

export const ConnectionNeedsReauthenticationData = Schema.Struct({
  connection_id: ConnectionId,
  connector_id: ConnectorId,
  name: Schema.String,
  access_scope: Schema.Literal("organizational", "personal")
}).annotations({ identifier: "ConnectionNeedsReauthenticationData" })

/** One event type's envelope: the same four fields for every type, `data` by type. */
const event = <T extends EventType, D extends Schema.Schema.Any>(type: T, data: D, description: string) =>
  Schema.Struct({
    id: EventId,
    type: Schema.Literal(type),
    at: Timestamp.annotations({ description: "When the change's transaction began." }),
    data
  }).annotations({ identifier: `Event_${type.replace(/\./g, "_")}`, description })

export const TaskCreatedEvent = event("task.created", TaskCreatedData, "A task was accepted.")
export const TaskStartedEvent = event("task.started", TaskStatusData, "A task's run began.")
export const TaskToolCallEvent = event("task.tool_call", TaskToolCallData, "A run called a tool.")
export const TaskModelCallEvent = event("task.model_call", TaskModelCallData, "A run called its model.")
export const TaskWaitingApprovalEvent = event(
  "task.waiting_approval",
  TaskStatusData,
  "A run paused for a person's decision on a tool call."
)
export const TaskCompletedEvent = event("task.completed", TaskEndedData, "A task ended with an answer.")
export const TaskErrorEvent = event("task.error", TaskEndedData, "A task ended in error.")
export const TaskCancelledEvent = event("task.cancelled", TaskEndedData, "A task was cancelled.")
export const ApprovalRequestedEvent = event(
  "approval.requested",
  ApprovalRequestedData,
  "A tool call waits for approval."
)
export const ApprovalDecidedEvent = event(
  "approval.decided",
  ApprovalDecidedData,
  "A request for approval was approved, rejected or expired; the task runs on."
)
export const ConnectionNeedsReauthenticationEvent = event(
  "connection.needs_reauthentication",
  ConnectionNeedsReauthenticationData,
  "A connection's OAuth2 token could not be renewed: authorize it again (a client-credentials connection: " +
    "PATCH its `credentials`)."
)
export const AuditRecordedEvent = event(
  "audit.recorded",
  AuditEvent,
  "An audit record was written (Admin and above), whole, as GET /v1/audit-logs shows it."
)

/** Any event: what an event stream's `data:` holds, and a webhook's body. */
export const Event = Schema.Union(
  TaskCreatedEvent,
  TaskStartedEvent,
  TaskToolCallEvent,
  TaskModelCallEvent,
  TaskWaitingApprovalEvent,
  TaskCompletedEvent,
  TaskErrorEvent,
  TaskCancelledEvent,
  ApprovalRequestedEvent,
  ApprovalDecidedEvent,
  ConnectionNeedsReauthenticationEvent,
  AuditRecordedEvent
).annotations({ identifier: "Event" })
export type Event = typeof Event.Type
