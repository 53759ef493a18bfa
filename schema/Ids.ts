import { type ParseResult, Schema } from "effect"

const shown = (actual: unknown) => {
  // JSON for all but undefined: String([]) is "" and String({}) "[object Object]"
  const text = JSON.stringify(actual) ?? String(actual)
  return text.length > 60 ? `${text.slice(0, 57)}…` : text
}

/** An id's failure as a person reads it, on every transport and in the CLI: `must be the id of …, not "x"`. */
export const idMessage = (what: string) => (issue: ParseResult.ParseIssue) => ({
  message: `must be the id of ${what}, not ${shown(issue.actual)}`,
  override: true
})

/** A UUID identifier: branded, described for the document, failing with `idMessage`. */
export const uuidId = <const B extends string>(brand: B, what: string, description: string) =>
  Schema.UUID.pipe(
    Schema.brand(brand),
    Schema.annotations({ description, message: idMessage(`${what} (a UUID)`) })
  )

export const OrganizationId = uuidId("OrganizationId", "an organization", "Identifier of an organization (UUID).")
export type OrganizationId = typeof OrganizationId.Type

export const UserId = uuidId("UserId", "a user", "Identifier of a user (UUID).")
export type UserId = typeof UserId.Type

export const ApiKeyId = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9]{12}$/),
  Schema.brand("ApiKeyId"),
  Schema.annotations({
    description: "Public identifier of an API key: the `<id>` part of `sy_<id>_<secret>`.",
    message: idMessage("an API key (12 lowercase letters and digits: the <id> of sy_<id>_<secret>)")
  })
)
export type ApiKeyId = typeof ApiKeyId.Type

export const AgentId = uuidId("AgentId", "an agent", "Identifier of an agent (UUID).")
export type AgentId = typeof AgentId.Type

export const ConnectorId = uuidId(
  "ConnectorId",
  "a connector",
  "Identifier of a connector (UUID): `items[].id` of the tool catalog."
)
export type ConnectorId = typeof ConnectorId.Type

export const ConnectionId = uuidId(
  "ConnectionId",
  "a connection",
  "Identifier of a connection (UUID), different from the connector id: `items[].connections[].id`."
)
export type ConnectionId = typeof ConnectionId.Type

export const TaskId = uuidId(
  "TaskId",
  "a task",
  "Identifier of a task: a UUID, time-ordered (version 7) for new tasks."
)
export type TaskId = typeof TaskId.Type

export const ScheduleId = uuidId("ScheduleId", "a schedule", "Identifier of a schedule (UUID).")
export type ScheduleId = typeof ScheduleId.Type
