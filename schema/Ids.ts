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

export const AgentId = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(128),
  Schema.brand("AgentId"),
  Schema.annotations({ description: "Identifier of an agent." })
)
export type AgentId = typeof AgentId.Type
