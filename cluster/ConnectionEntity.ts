import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"

/** What a call needs from a connection: headers, query parameters and cookies to add. */
export class AppliedCredentials extends Schema.Class<AppliedCredentials>("AppliedCredentials")({
  headers: Schema.Record({ key: Schema.String, value: Schema.Redacted(Schema.String) }),
  query: Schema.Record({ key: Schema.String, value: Schema.Redacted(Schema.String) }),
  cookies: Schema.Record({ key: Schema.String, value: Schema.Redacted(Schema.String) }),
  /** Epoch ms after which these must not be used; null: no expiry. */
  expires_at: Schema.NullOr(Schema.Number)
}) {}

export class ConnectionUnusable extends Schema.TaggedError<ConnectionUnusable>()("ConnectionUnusable", {
  code: Schema.Literal(
    "connection_not_found",
    "connection_pending_authorization",
    "connection_needs_reauthentication",
    "connection_credentials_unreadable",
    // the OAuth2 token endpoint, now: the invoke's own codes for a target that failed
    "egress_refused",
    "upstream_unreachable",
    "upstream_timeout"
  ),
  message: Schema.String
}) {}

/**
 * One entity per connection, cluster-wide: it decrypts the credentials and keeps OAuth2 tokens fresh,
 * so a refresh happens once however many nodes need the token at the same moment.
 */
export const ConnectionEntity = Entity.make("Connection", [
  Rpc.make("Credentials", {
    payload: {
      /** The upstream rejected the current token: refresh even if it looks valid. */
      stale_token: Schema.Boolean
    },
    success: AppliedCredentials,
    error: ConnectionUnusable
  }),
  Rpc.make("Forget")
])
