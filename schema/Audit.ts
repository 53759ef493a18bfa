import { Schema } from "effect"
import { OrganizationId } from "./Ids.js"
import { IntegerParam } from "./QueryParams.js"
import { DateParam, Timestamp } from "./Timestamp.js"

/**
 * The actions written today, each in the audit log's table in docs/guides/access-control.md (a test holds
 * both to the code). The list is open: an area that changes access adds its own.
 */
export const auditActions = [
  "CREATE_ORGANIZATION",
  "ADD_MEMBER",
  "UPDATE_MEMBER_ROLE",
  "REMOVE_MEMBER",
  "CREATE_API_KEY",
  "REVOKE_API_KEY",
  "CREATE_AUTHORIZATION",
  "REVOKE_AUTHORIZATION",
  "CREATE_GROUP",
  "UPDATE_GROUP",
  "DELETE_GROUP",
  "ADD_GROUP_MEMBER",
  "REMOVE_GROUP_MEMBER",
  "CREATE_AGENT",
  "UPDATE_AGENT",
  "DELETE_AGENT",
  "CREATE_CONNECTOR",
  "UPDATE_CONNECTOR",
  "ARCHIVE_CONNECTOR",
  "CREATE_CONNECTION",
  "UPDATE_CONNECTION",
  "DELETE_CONNECTION",
  "AUTHORIZE_CONNECTION",
  "ACCESS_DENIED",
  "AUTHENTICATION_FAILED",
  "RATE_LIMITED",
  "CREATE_SKILL",
  "UPDATE_SKILL",
  "UPDATE_SKILL_ACCESS",
  "PUBLISH_SKILL",
  "ARCHIVE_SKILL",
  "ATTACH_SKILL",
  "DETACH_SKILL",
  "APPROVE_TOOL_CALL",
  "REJECT_TOOL_CALL",
  "UPDATE_SSO_SETTINGS",
  "DELETE_SSO_SETTINGS",
  "SSO_SIGN_IN",
  "PASSWORD_SIGN_IN",
  "SET_PASSWORD",
  "UPDATE_MODEL_PROVIDER",
  "DELETE_MODEL_PROVIDER",
  "CREATE_SCHEDULE",
  "UPDATE_SCHEDULE",
  "PAUSE_SCHEDULE",
  "RESUME_SCHEDULE",
  "TRIGGER_SCHEDULE",
  "DELETE_SCHEDULE",
  "CREATE_FILE",
  "DELETE_FILE",
  "CREATE_WEBHOOK",
  "UPDATE_WEBHOOK",
  "DELETE_WEBHOOK",
  "ROTATE_WEBHOOK_SECRET",
  "DISABLE_WEBHOOK",
  "CREATE_KNOWLEDGE_BASE",
  "UPDATE_KNOWLEDGE_BASE",
  "DELETE_KNOWLEDGE_BASE",
  "ADD_KNOWLEDGE_DOCUMENT",
  "DELETE_KNOWLEDGE_DOCUMENT",
  "ATTACH_KNOWLEDGE_BASE",
  "DETACH_KNOWLEDGE_BASE",
  "CREATE_FUNCTION",
  "UPDATE_FUNCTION",
  "DELETE_FUNCTION",
  "ATTACH_FUNCTION",
  "DETACH_FUNCTION",
  "UPDATE_COMMAND_POLICY",
  "CHECK_COMMAND"
] as const

export const AuditAction = Schema.String.pipe(
  Schema.pattern(/^[A-Z][A-Z0-9_]{0,63}$/, { message: () => "must be an event type like CREATE_AGENT" })
).annotations({
  description: `Event type, e.g. ${auditActions.slice(0, 6).join(", ")}, … (see docs/guides/access-control.md).`
})

export const AuditActorType = Schema.Literal("user", "api_key", "oauth_client", "system")
export type AuditActorType = typeof AuditActorType.Type

export const AuditActor = Schema.Struct({
  type: AuditActorType,
  id: Schema.String.annotations({ description: "User id, API key id, OAuth client id, or the system part's name." }),
  key_id: Schema.NullOr(Schema.String).annotations({ description: "The API key the request carried, if any." })
}).annotations({ identifier: "AuditActor" })
export type AuditActor = typeof AuditActor.Type

export const AuditTarget = Schema.Struct({
  type: Schema.String.annotations({ description: "What was acted on: `agent`, `member`, `api_key`, `route`, …" }),
  id: Schema.String,
  name: Schema.optional(Schema.String)
}).annotations({ identifier: "AuditTarget" })
export type AuditTarget = typeof AuditTarget.Type

export const AuditOutcome = Schema.Literal("success", "denied", "failure").annotations({
  description: "`success`: the change was made. `denied`: refused by authentication or authorization. " +
    "`failure`: attempted and failed for another reason."
})
export type AuditOutcome = typeof AuditOutcome.Type

export class AuditEvent extends Schema.Class<AuditEvent>("AuditEvent")({
  id: Schema.UUID,
  seq: Schema.Int.annotations({ description: "Position in the organization's chain, from 1." }),
  time: Timestamp,
  organization_id: OrganizationId,
  actor: AuditActor,
  action: Schema.String,
  targets: Schema.Array(AuditTarget),
  outcome: AuditOutcome,
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  details: Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  prev_hash: Schema.String.annotations({ description: "The previous record's `hash` (64 zeros for the first)." }),
  hash: Schema.String.annotations({
    description: "SHA-256 (hex) of the record's canonical JSON, `prev_hash` included."
  })
}) {}

export const AuditFilters = {
  event_type: Schema.optional(AuditAction).annotations({ description: "Only this event type." }),
  actor: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "Only events by this actor: a user id, API key id or OAuth client id (the key a request carried " +
      "matches too)."
  }),
  target: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "Only events about this thing: the id of one of their `targets` (an agent, member, key, …)."
  }),
  from: Schema.optional(DateParam).annotations({ description: "From this time (inclusive), ISO 8601." }),
  to: Schema.optional(DateParam).annotations({ description: "Before this time (exclusive), ISO 8601." })
}

export const AuditListParams = Schema.Struct({
  ...AuditFilters,
  limit: Schema.optional(IntegerParam(1, 500)).annotations({
    description: "Page size, 1–500 (default 100)."
  }),
  cursor: Schema.optional(Schema.String).annotations({ description: "The previous page's `next_cursor`." })
})

/** The columns of a CSV export, in order: the fields of AuditEvent, flattened; JSON fields as JSON text. */
export const AUDIT_CSV_COLUMNS = [
  "id",
  "seq",
  "time",
  "organization_id",
  "actor_type",
  "actor_id",
  "actor_key_id",
  "action",
  "targets",
  "outcome",
  "ip",
  "user_agent",
  "request_id",
  "details",
  "prev_hash",
  "hash"
] as const

export const AuditExportParams = Schema.Struct({
  ...AuditFilters,
  format: Schema.optionalWith(Schema.Literal("csv", "json", "ndjson"), { default: () => "json" as const })
    .annotations({
      description: "`json`: one JSON array; `ndjson`: one JSON object a line; `csv`: RFC 4180 with a header row."
    })
})

export const AuditPage = Schema.Struct({
  items: Schema.Array(AuditEvent),
  next_cursor: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AuditPage" })
