import { Schema } from "effect"

export const OrganizationId = Schema.UUID.pipe(
  Schema.brand("OrganizationId"),
  Schema.annotations({ description: "Identifier of an organization (UUID)." })
)
export type OrganizationId = typeof OrganizationId.Type

export const UserId = Schema.UUID.pipe(
  Schema.brand("UserId"),
  Schema.annotations({ description: "Identifier of a user (UUID)." })
)
export type UserId = typeof UserId.Type

export const ApiKeyId = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9]{12}$/),
  Schema.brand("ApiKeyId"),
  Schema.annotations({ description: "Public identifier of an API key: the `<id>` part of `sy_<id>_<secret>`." })
)
export type ApiKeyId = typeof ApiKeyId.Type

export const AgentId = Schema.UUID.pipe(
  Schema.brand("AgentId"),
  Schema.annotations({ description: "Identifier of an agent (UUID)." })
)
export type AgentId = typeof AgentId.Type

export const ConnectorId = Schema.UUID.pipe(
  Schema.brand("ConnectorId"),
  Schema.annotations({ description: "Identifier of a connector (UUID): `items[].id` of the tool catalog." })
)
export type ConnectorId = typeof ConnectorId.Type

export const ConnectionId = Schema.UUID.pipe(
  Schema.brand("ConnectionId"),
  Schema.annotations({
    description: "Identifier of a connection (UUID), different from the connector id: `items[].connections[].id`."
  })
)
export type ConnectionId = typeof ConnectionId.Type

export const TaskId = Schema.UUID.pipe(
  Schema.brand("TaskId"),
  Schema.annotations({ description: "Identifier of a task: a UUID, time-ordered (version 7) for new tasks." })
)
export type TaskId = typeof TaskId.Type

export const ScheduleId = Schema.UUID.pipe(
  Schema.brand("ScheduleId"),
  Schema.annotations({ description: "Identifier of a schedule (UUID)." })
)
export type ScheduleId = typeof ScheduleId.Type
