import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/**
 * Every REST error has one wire shape: `{"error":{"code","message","request_id","details"}}`.
 * `code` is stable and machine-readable; `message` tells a person what to do.
 */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    code: Schema.String.annotations({ description: "Stable machine-readable error code." }),
    message: Schema.String.annotations({ description: "What went wrong and what to do about it." }),
    request_id: Schema.optional(Schema.String).annotations({ description: "The request's `x-request-id`." }),
    details: Schema.optional(Schema.Unknown).annotations({ description: "Structured details, e.g. failing fields." })
  })
}).annotations({ identifier: "ErrorBody" })
export type ErrorBody = typeof ErrorBody.Type

const fields = {
  code: Schema.String,
  message: Schema.String,
  details: Schema.optional(Schema.Unknown)
}

interface ErrorFields {
  readonly _tag: string
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

/** The wire schema of an error class: the envelope on the wire, the tagged class in code. */
const onTheWire = <A extends ErrorFields, I extends ErrorFields>(
  self: Schema.Schema<A, I>,
  tag: string,
  status: number
) => {
  return Schema.transform(ErrorBody, self, {
    strict: false,
    decode: (body) => ({ _tag: tag, code: body.error.code, message: body.error.message, details: body.error.details }),
    encode: (e: I) => ({
      error: { code: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) }
    })
  }).annotations(HttpApiSchema.annotations({ status }))
}

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", fields) {
  static readonly of = (message: string, details?: unknown, code = "bad_request") =>
    new BadRequest({ code, message, details })
}
export const BadRequestWire = onTheWire(BadRequest, "BadRequest", 400)

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", fields) {
  static readonly of = (message: string, code = "unauthenticated") => new Unauthenticated({ code, message })
}
export const UnauthenticatedWire = onTheWire(Unauthenticated, "Unauthenticated", 401)

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {
  static readonly of = (message: string, code = "forbidden") => new Forbidden({ code, message })
}
export const ForbiddenWire = onTheWire(Forbidden, "Forbidden", 403)

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  static readonly of = (what: string, id?: string) =>
    new NotFound({ code: "not_found", message: id === undefined ? `${what} not found.` : `${what} '${id}' not found.` })
}
export const NotFoundWire = onTheWire(NotFound, "NotFound", 404)

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", fields) {
  static readonly of = (message: string, code = "conflict") => new Conflict({ code, message })
}
export const ConflictWire = onTheWire(Conflict, "Conflict", 409)

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {
  static readonly of = (message: string, details?: unknown) =>
    new ServiceUnavailable({ code: "unavailable", message, details })
}
export const ServiceUnavailableWire = onTheWire(ServiceUnavailable, "ServiceUnavailable", 503)

export class Unprocessable extends Schema.TaggedError<Unprocessable>()("Unprocessable", fields) {
  static readonly of = (message: string, code = "unprocessable", details?: unknown) =>
    new Unprocessable({ code, message, details })
}
export const UnprocessableWire = onTheWire(Unprocessable, "Unprocessable", 422)

export class BadGateway extends Schema.TaggedError<BadGateway>()("BadGateway", fields) {
  static readonly of = (message: string, code = "upstream_unreachable") => new BadGateway({ code, message })
}
export const BadGatewayWire = onTheWire(BadGateway, "BadGateway", 502)

export class GatewayTimeout extends Schema.TaggedError<GatewayTimeout>()("GatewayTimeout", fields) {
  static readonly of = (message: string) => new GatewayTimeout({ code: "upstream_timeout", message })
}
export const GatewayTimeoutWire = onTheWire(GatewayTimeout, "GatewayTimeout", 504)

export class PaymentRequired extends Schema.TaggedError<PaymentRequired>()("PaymentRequired", fields) {
  static readonly of = (message: string, details?: unknown) =>
    new PaymentRequired({ code: "budget_exhausted", message, details })
}
export const PaymentRequiredWire = onTheWire(PaymentRequired, "PaymentRequired", 402)

export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", fields) {
  /** `details.retry_after_seconds` is also sent as the `Retry-After` header. */
  static readonly of = (message: string, retryAfterSeconds: number) =>
    new TooManyRequests({ code: "rate_limited", message, details: { retry_after_seconds: retryAfterSeconds } })
}
export const TooManyRequestsWire = onTheWire(TooManyRequests, "TooManyRequests", 429)

/**
 * Where a client meets an error code: `rest`, the one error body above (also the `/mcp/` endpoint's HTTP
 * refusals); `model`, a failed model call, which ends a task (named in its `result`) or the built-in agent's
 * tool call, not a request; `oauth`, the OAuth endpoints' `{"error", "error_description"}` (RFC 6749, 7591).
 */
export type ErrorCodeSurface = "rest" | "model" | "oauth"

export interface ErrorCodeEntry {
  readonly code: string
  /** The HTTP status it is sent with; `null` for a model failure, which answers no request of its own. */
  readonly status: number | null
  readonly surface: ErrorCodeSurface
  /** One line: when a client gets it, and what to do. */
  readonly meaning: string
}

/**
 * Every error code a client can receive: a contract, read by docs and tests, never written at run time.
 * docs/reference/errors.md is generated from it (`node --import tsx scripts/error-codes.ts`), and
 * test/docs/ErrorCodes.test.ts fails when the source sends a code this list lacks.
 */
export const ErrorCodes: ReadonlyArray<ErrorCodeEntry> = [
  // 400
  {
    code: "validation_failed",
    status: 400,
    surface: "rest",
    meaning: "The request does not fit the contract or the operation's input schema: `details.issues[].path` names " +
      "every failing field (also a malformed id or date, a path segment over 1024 characters, a connector path " +
      "parameter `.` or `..`)."
  },
  {
    code: "invalid_json",
    status: 400,
    surface: "rest",
    meaning: "The body is not JSON, or nests deeper than 64 levels."
  },
  {
    code: "invalid_text",
    status: 400,
    surface: "rest",
    meaning: "The NUL character, in a body or a URL: PostgreSQL text cannot hold it, so it is refused, never stripped."
  },
  {
    code: "bad_request",
    status: 400,
    surface: "rest",
    meaning: "A request that cannot be served as sent, e.g. `role` on a personal key; the message says what to change."
  },
  {
    code: "invalid_cursor",
    status: 400,
    surface: "rest",
    meaning: "`cursor` is not one this API returned; start the listing again without it."
  },
  {
    code: "type_required",
    status: 400,
    surface: "rest",
    meaning: "`GET /v1/tools` without `type=connector` (or with another type)."
  },
  {
    code: "invalid_idempotency_key",
    status: 400,
    surface: "rest",
    meaning: "The `Idempotency-Key` header is not 1–255 visible ASCII characters."
  },
  {
    code: "unknown_agent",
    status: 400,
    surface: "rest",
    meaning: "A group's `agent_ids` or a skill's `allowlist` names an agent that is not a live agent of this " +
      "organization."
  },
  {
    code: "unknown_group",
    status: 400,
    surface: "rest",
    meaning: "Single sign-on's `group_mapping` names a group that is not this organization's."
  },
  {
    code: "personal_key_required",
    status: 400,
    surface: "rest",
    meaning: "`/v1/oauth/authorizations` belongs to a person: call it with a personal API key."
  },
  {
    code: "invalid_openapi",
    status: 400,
    surface: "rest",
    meaning: "The OpenAPI document cannot be imported; the message says what and where (`details.pointer`, or the " +
      "YAML line)."
  },
  {
    code: "built_in_connector",
    status: 400,
    surface: "rest",
    meaning: "Built-in connectors cannot be changed or removed."
  },
  {
    code: "credentials_not_accepted",
    status: 400,
    surface: "rest",
    meaning: "The connector cannot use these credentials (no matching security scheme or OAuth2 flow; any " +
      "credentials but `none` on the built-in Switchyard connector)."
  },
  {
    code: "not_oauth",
    status: 400,
    surface: "rest",
    meaning: "`POST /v1/tools/connections/{id}/authorize` on a connection that does not sign in through OAuth2 " +
      "authorization code."
  },
  {
    code: "header_not_allowed",
    status: 400,
    surface: "rest",
    meaning: "Connector invoke: a header in `headers` that the connection or its credentials set."
  },
  {
    code: "parameter_not_allowed",
    status: 400,
    surface: "rest",
    meaning: "Connector invoke: a query parameter in `query_params` that the connection's credentials set."
  },
  {
    code: "body_not_accepted",
    status: 400,
    surface: "rest",
    meaning: "Connector invoke: a non-empty `body_params` for an operation that takes no body."
  },
  {
    code: "invalid_skill",
    status: 400,
    surface: "rest",
    meaning: "An agent's `skills` or a skill's `actions` entry names a connection the caller cannot use, or an " +
      "operation it does not have."
  },
  {
    code: "skill_archived",
    status: 400,
    surface: "rest",
    meaning: "An archived skill cannot change, and stays archived."
  },
  {
    code: "skill_not_published",
    status: 400,
    surface: "rest",
    meaning: "Only published skills can be added to agents: publish it first (Admin+)."
  },
  {
    code: "invalid_manifest",
    status: 400,
    surface: "rest",
    meaning: "`switchyard.yaml` is not valid: `details.problems` lists each field, line and message."
  },
  {
    code: "unsupported_protocol_version",
    status: 400,
    surface: "rest",
    meaning: "MCP endpoint: an `MCP-Protocol-Version` this server does not speak."
  },
  {
    code: "session_required",
    status: 400,
    surface: "rest",
    meaning: "MCP endpoint: send the `Mcp-Session-Id` that `initialize` returned."
  },
  // 401
  {
    code: "missing_api_key",
    status: 401,
    surface: "rest",
    meaning: "No `x-api-key` header."
  },
  {
    code: "malformed_api_key",
    status: 401,
    surface: "rest",
    meaning: "The `x-api-key` header is not a Switchyard key (`sy_<id>_<secret>`)."
  },
  {
    code: "invalid_api_key",
    status: 401,
    surface: "rest",
    meaning: "An unknown key, a wrong secret, a removed member's key, or an expired caller token."
  },
  {
    code: "revoked_api_key",
    status: 401,
    surface: "rest",
    meaning: "The key was revoked: create a new one."
  },
  {
    code: "bearer_not_supported",
    status: 401,
    surface: "rest",
    meaning: "`Authorization: Bearer` on REST, which takes `x-api-key` (Bearer is the MCP endpoint's scheme)."
  },
  {
    code: "unauthenticated",
    status: 401,
    surface: "rest",
    meaning: "Not authenticated; the default of the 401 error, whose answers today each name a code above."
  },
  {
    code: "missing_token",
    status: 401,
    surface: "rest",
    meaning: "MCP endpoint: no `Authorization: Bearer` token; `WWW-Authenticate` points at the resource metadata."
  },
  {
    code: "api_key_not_accepted",
    status: 401,
    surface: "rest",
    meaning: "MCP endpoint: `x-api-key` instead of an OAuth access token."
  },
  {
    code: "invalid_token",
    status: 401,
    surface: "rest",
    meaning: "MCP endpoint: a bad, expired, revoked or foreign-audience access token."
  },
  // 402
  {
    code: "budget_exhausted",
    status: 402,
    surface: "rest",
    meaning: "The agent's budget for this period is spent: raise it (`PATCH`) or wait for the next period."
  },
  // 403
  {
    code: "forbidden",
    status: 403,
    surface: "rest",
    meaning: "The caller's role does not allow this (recorded in the audit log as `ACCESS_DENIED`)."
  },
  {
    code: "skill_not_allowed",
    status: 403,
    surface: "rest",
    meaning: "Under `SERVICE_SKILL_VISIBILITY_MODE=enforce`, a skill whose visibility does not admit the agent."
  },
  {
    code: "egress_refused",
    status: 403,
    surface: "rest",
    meaning: "Connector invoke: the target resolves to an internal address; allow it in `SWITCHYARD_EGRESS_ALLOW`."
  },
  {
    code: "insufficient_scope",
    status: 403,
    surface: "rest",
    meaning: "MCP endpoint: a tool beyond the access token's scope (`mcp:read`: read-only tools; `mcp:write`: all)."
  },
  {
    code: "forbidden_origin",
    status: 403,
    surface: "rest",
    meaning: "MCP endpoint: a request from a foreign `Origin`."
  },
  // 404, 405, 406
  {
    code: "not_found",
    status: 404,
    surface: "rest",
    meaning: "No such resource that the caller can see (another organization's ids included)."
  },
  {
    code: "route_not_found",
    status: 404,
    surface: "rest",
    meaning: "No route has this path."
  },
  {
    code: "session_not_found",
    status: 404,
    surface: "rest",
    meaning: "MCP endpoint: the session is unknown, ended or another user's; initialize a new one."
  },
  {
    code: "method_not_allowed",
    status: 405,
    surface: "rest",
    meaning: "The path exists, not with this method; the `Allow` header lists the methods it takes."
  },
  {
    code: "not_acceptable",
    status: 406,
    surface: "rest",
    meaning: "MCP endpoint: a `GET` without `Accept: text/event-stream`."
  },
  // 409
  {
    code: "already_member",
    status: 409,
    surface: "rest",
    meaning: "The person is a member of this organization already."
  },
  {
    code: "last_super_admin",
    status: 409,
    surface: "rest",
    meaning: "The change would leave the organization without a Super admin."
  },
  {
    code: "group_name_taken",
    status: 409,
    surface: "rest",
    meaning: "A group of that name (case-insensitively) exists in this organization."
  },
  {
    code: "already_in_group",
    status: 409,
    surface: "rest",
    meaning: "The member is in the group already."
  },
  {
    code: "skill_name_taken",
    status: 409,
    surface: "rest",
    meaning: "A skill of that name exists in this organization."
  },
  {
    code: "approval_decided",
    status: 409,
    surface: "rest",
    meaning: "The request for approval was decided (or expired) already."
  },
  {
    code: "idempotency_conflict",
    status: 409,
    surface: "rest",
    meaning: "This `Idempotency-Key` was used with a different request body."
  },
  {
    code: "connection_pending_authorization",
    status: 409,
    surface: "rest",
    meaning: "The connection's OAuth2 sign-in is not finished: open its `connector_page_url`."
  },
  {
    code: "connection_needs_reauthentication",
    status: 409,
    surface: "rest",
    meaning: "The provider refused a token refresh: `POST /v1/tools/connections/{id}/authorize` and sign in again."
  },
  {
    code: "connection_not_found",
    status: 409,
    surface: "rest",
    meaning: "The connection or its connector was removed while the call was being prepared."
  },
  {
    code: "conflict",
    status: 409,
    surface: "rest",
    meaning: "The request conflicts with the current state; the default of the 409 error."
  },
  // 413, 415
  {
    code: "payload_too_large",
    status: 413,
    surface: "rest",
    meaning: "The body is larger than `SWITCHYARD_MAX_BODY_BYTES`; a chunked body that grows past it has its " +
      "connection closed."
  },
  {
    code: "unsupported_media_type",
    status: 415,
    surface: "rest",
    meaning: "A body whose `Content-Type` is missing, or neither `application/json` nor `application/*+json`."
  },
  // 422
  {
    code: "sso_issuer_unreachable",
    status: 422,
    surface: "rest",
    meaning: "Single sign-on: the issuer's OpenID configuration cannot be read (the message says why, e.g. the " +
      "egress guard)."
  },
  {
    code: "sso_issuer_not_oidc",
    status: 422,
    surface: "rest",
    meaning: "Single sign-on: the issuer answers, but not as an OpenID provider of that issuer with code flow and " +
      "PKCE S256."
  },
  {
    code: "connector_has_no_server_url",
    status: 422,
    surface: "rest",
    meaning: "Connector invoke: the document's server is relative and no `server_url` was given."
  },
  {
    code: "path_outside_server_url",
    status: 422,
    surface: "rest",
    meaning: "Connector invoke: the operation's path would leave the server URL's base path."
  },
  {
    code: "unprocessable",
    status: 422,
    surface: "rest",
    meaning: "Well-formed but unusable input; the default of the 422 error."
  },
  // 429
  {
    code: "rate_limited",
    status: 429,
    surface: "rest",
    meaning: "Too many failed attempts: retry after `Retry-After` seconds (also `details.retry_after_seconds`)."
  },
  // 5xx
  {
    code: "internal_error",
    status: 500,
    surface: "rest",
    meaning: "A bug on our side; nothing internal is sent: quote the `request_id`."
  },
  {
    code: "upstream_unreachable",
    status: 502,
    surface: "rest",
    meaning: "Connector invoke: the target could not be reached (a `POST` or `PATCH` is never resent)."
  },
  {
    code: "database_unavailable",
    status: 503,
    surface: "rest",
    meaning: "The database is unavailable right now: retry after `Retry-After`."
  },
  {
    code: "unavailable",
    status: 503,
    surface: "rest",
    meaning: "The node is starting, stopping or not ready (`/readyz` says why), or the request was interrupted: " +
      "retry."
  },
  {
    code: "upstream_timeout",
    status: 504,
    surface: "rest",
    meaning: "Connector invoke: no complete answer within `SWITCHYARD_CONNECTOR_TIMEOUT`; the upstream request is " +
      "aborted."
  },
  // model calls: a task's `result` reads "The model call failed (<code>): …"
  {
    code: "model_not_configured",
    status: null,
    surface: "model",
    meaning: "No key or endpoint for the agent's provider: set the organization's model provider or the " +
      "deployment's variables."
  },
  {
    code: "model_egress_refused",
    status: null,
    surface: "model",
    meaning: "A model endpoint set by a user resolves to an internal address; allow it in " +
      "`SWITCHYARD_EGRESS_ALLOW`."
  },
  {
    code: "model_unreachable",
    status: null,
    surface: "model",
    meaning: "The model endpoint could not be reached."
  },
  {
    code: "model_http_error",
    status: null,
    surface: "model",
    meaning: "The model endpoint answered with an HTTP error (a wrong key, an unknown model, a limit)."
  },
  {
    code: "model_bad_response",
    status: null,
    surface: "model",
    meaning: "The model endpoint's answer could not be read as its protocol's."
  },
  {
    code: "model_stream_error",
    status: null,
    surface: "model",
    meaning: "The model's streamed answer broke off or reported an error."
  },
  {
    code: "script_exhausted",
    status: null,
    surface: "model",
    meaning: "A `scripted` model was asked for more turns than its `script` holds."
  },
  {
    code: "max_steps",
    status: null,
    surface: "model",
    meaning: "The built-in agent's `ask` made its 10 model calls without a final answer."
  },
  // OAuth endpoints
  {
    code: "invalid_request",
    status: 400,
    surface: "oauth",
    meaning: "A parameter is missing, repeated or malformed (PKCE `S256` is required); at `/oauth/authorize` it " +
      "is sent back to the client's redirect URI."
  },
  {
    code: "invalid_client",
    status: 400,
    surface: "oauth",
    meaning: "Unknown `client_id`, or an unusable client metadata document."
  },
  {
    code: "invalid_client",
    status: 401,
    surface: "oauth",
    meaning: "Client authentication failed: a wrong secret or malformed HTTP Basic credentials."
  },
  {
    code: "invalid_grant",
    status: 400,
    surface: "oauth",
    meaning: "The code or refresh token is unknown, used, expired, revoked, another client's, or fails PKCE."
  },
  {
    code: "invalid_scope",
    status: 400,
    surface: "oauth",
    meaning: "A refresh asked for more scope than was granted."
  },
  {
    code: "invalid_target",
    status: 400,
    surface: "oauth",
    meaning: "`resource` is not the one the grant was issued for."
  },
  {
    code: "unsupported_grant_type",
    status: 400,
    surface: "oauth",
    meaning: "Use `authorization_code` or `refresh_token`."
  },
  {
    code: "unsupported_response_type",
    status: 302,
    surface: "oauth",
    meaning: "Sent back to the client's redirect URI: only `response_type=code` is supported."
  },
  {
    code: "access_denied",
    status: 302,
    surface: "oauth",
    meaning: "Sent back to the client's redirect URI: the person denied the request on the consent page."
  },
  {
    code: "invalid_client_metadata",
    status: 400,
    surface: "oauth",
    meaning: "Client registration: the metadata is not JSON, or has an unknown scope or a bad field."
  },
  {
    code: "invalid_redirect_uri",
    status: 400,
    surface: "oauth",
    meaning: "Client registration: a redirect URI that is neither https nor http on 127.0.0.1, [::1] or localhost."
  },
  {
    code: "rate_limited",
    status: 429,
    surface: "oauth",
    meaning: "Too many registrations from this address, or wrong secrets for this client: retry after " +
      "`Retry-After`."
  },
  {
    code: "not_found",
    status: 404,
    surface: "oauth",
    meaning: "No such OAuth resource on this server."
  }
]
