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
  details: Schema.optional(Schema.Unknown),
  // what a client decodes from the envelope, to quote; the server writes each request's own (ErrorEnvelope.ts)
  request_id: Schema.optional(Schema.String)
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
    decode: (body) => ({
      _tag: tag,
      code: body.error.code,
      message: body.error.message,
      details: body.error.details,
      ...(body.error.request_id === undefined ? {} : { request_id: body.error.request_id })
    }),
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

export class Gone extends Schema.TaggedError<Gone>()("Gone", fields) {
  static readonly of = (message: string, code: string, details?: unknown) => new Gone({ code, message, details })
}
export const GoneWire = onTheWire(Gone, "Gone", 410)

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

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {
  static readonly of = (message: string, code = "payload_too_large") => new PayloadTooLarge({ code, message })
}
export const PayloadTooLargeWire = onTheWire(PayloadTooLarge, "PayloadTooLarge", 413)

export class RangeNotSatisfiable extends Schema.TaggedError<RangeNotSatisfiable>()("RangeNotSatisfiable", fields) {
  static readonly of = (message: string) => new RangeNotSatisfiable({ code: "range_not_satisfiable", message })
}
export const RangeNotSatisfiableWire = onTheWire(RangeNotSatisfiable, "RangeNotSatisfiable", 416)

export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", fields) {
  static readonly of = (message: string, code = "unsupported_media_type") => new UnsupportedMediaType({ code, message })
}
export const UnsupportedMediaTypeWire = onTheWire(UnsupportedMediaType, "UnsupportedMediaType", 415)

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
const entry =
  (surface: ErrorCodeSurface) => (status: number | null, code: string, meaning: string): ErrorCodeEntry => ({
    code,
    status,
    surface,
    meaning
  })
const rest = entry("rest")
const oauth = entry("oauth")
const model = (code: string, meaning: string) => entry("model")(null, code, meaning)

export const ErrorCodes: ReadonlyArray<ErrorCodeEntry> = [
  rest(
    400,
    "validation_failed",
    "The request does not fit the contract or the operation's input schema: `details.issues[].path` names every " +
      "failing field (also a malformed id or date, a path segment over 1024 characters, a connector path parameter " +
      "`.` or `..`)."
  ),
  rest(400, "invalid_json", "The body is not JSON, or nests deeper than 64 levels."),
  rest(
    400,
    "invalid_text",
    "The NUL character, in a body or a URL: PostgreSQL text cannot hold it, so it is refused, never stripped."
  ),
  rest(
    400,
    "bad_request",
    "A request that cannot be served as sent, e.g. `role` on a personal key; the message says what to change."
  ),
  rest(
    400,
    "invalid_range",
    "Workspace file content: a `Range` header that is not one `bytes=` range (`first-last`, `first-` or `-suffix`)."
  ),
  rest(
    400,
    "invalid_multipart",
    "Workspace file upload: a multipart body without exactly one file part, or one that cannot be parsed."
  ),
  rest(400, "file_not_text", "Workspace file read as text (MCP, agent tools): the file holds binary content."),
  rest(
    400,
    "invalid_last_event_id",
    "`Last-Event-ID` (or `last_event_id`) is not an event id: send a decimal id an event stream sent, or `0`."
  ),
  rest(
    400,
    "invalid_code",
    "A custom function's `code` does not load as a function (a syntax error, a throw at the top level, no default " +
      "export function): `details.message` and `details.stack` say where. Nothing is stored."
  ),
  rest(400, "invalid_cursor", "`cursor` is not one this API returned; start the listing again without it."),
  rest(
    400,
    "invalid_language",
    "A knowledge base's `language` is not a text search configuration of this PostgreSQL (`details.available` " +
      "lists them: english, simple, german, …)."
  ),
  rest(400, "unknown_file", "A knowledge document's `file_id` names no workspace file the caller can read."),
  rest(
    400,
    "invalid_input_schema",
    "A custom function's `input_schema` is not a JSON Schema (2020-12) or is over 64 KiB."
  ),
  rest(400, "type_required", "`GET /v1/tools` without `type=connector` (or with another type)."),
  rest(400, "invalid_idempotency_key", "The `Idempotency-Key` header is not 1–255 visible ASCII characters."),
  rest(
    400,
    "invalid_cron",
    "A schedule's `cron` is not a cron expression (5 or 6 fields, or a macro such as @daily), or one that never " +
      "matches a date (`0 0 31 2 *`); the message says why."
  ),
  rest(400, "invalid_timezone", "A schedule's `timezone` is not an IANA time zone name (e.g. Europe/Berlin)."),
  rest(
    400,
    "invalid_time_range",
    "`GET /v1/usage`, the audit log and its export: `from` is not before `to`; usage: or the range is longer than " +
      "its bucket allows (93 days of hours, 1830 of days). `GET /v1/tasks`: `created_after` is not before " +
      "`created_before`."
  ),
  rest(
    400,
    "invalid_group_by",
    "`GET /v1/usage`: `group_by` names something other than agent, user, model, provider, connector, source."
  ),
  rest(
    409,
    "schedule_agent_deleted",
    "The schedule's agent was deleted: it cannot be resumed or run until `agent_id` points at another agent."
  ),
  rest(
    400,
    "invalid_duration",
    "A schedule's `every`, `jitter` or `catchup_window` is not a duration in range (`details.field` names it)."
  ),
  rest(
    400,
    "unknown_agent",
    "A group's or an organization key's `agent_ids`, or a skill's `allowlist`, names an agent that is not a live " +
      "agent of this organization."
  ),
  rest(400, "unknown_group", "Single sign-on's `group_mapping` names a group that is not this organization's."),
  rest(
    400,
    "personal_key_required",
    "`/v1/oauth/authorizations` belongs to a person: call it with a personal API key."
  ),
  rest(
    400,
    "invalid_openapi",
    "The OpenAPI document cannot be imported; the message says what and where (`details.pointer`, or the YAML " +
      "line)."
  ),
  rest(400, "built_in_connector", "Built-in connectors cannot be changed or removed."),
  rest(
    400,
    "credentials_not_accepted",
    "The connector cannot use these credentials (no matching security scheme or OAuth2 flow; any credentials but " +
      "`none` on the built-in Switchyard connector)."
  ),
  rest(
    400,
    "not_oauth",
    "`POST /v1/tools/connections/{id}/authorize` on a connection that does not sign in through OAuth2 authorization " +
      "code."
  ),
  rest(
    400,
    "header_not_allowed",
    "Connector invoke: a header in `headers` that the connection or its credentials set."
  ),
  rest(
    400,
    "parameter_not_allowed",
    "Connector invoke: a query parameter in `query_params` that the connection's credentials set."
  ),
  rest(400, "body_not_accepted", "Connector invoke: a non-empty `body_params` for an operation that takes no body."),
  rest(
    400,
    "invalid_skill",
    "An agent's `skills` or a skill's `actions` entry names a connection the caller cannot use, or an operation it " +
      "does not have."
  ),
  rest(400, "skill_archived", "An archived skill cannot change, and stays archived."),
  rest(400, "skill_not_published", "Only published skills can be added to agents: publish it first (Admin+)."),
  rest(
    400,
    "invalid_manifest",
    "`switchyard.yaml` is not valid: `details.problems` lists each field, line and message."
  ),
  rest(400, "unsupported_protocol_version", "MCP endpoint: an `MCP-Protocol-Version` this server does not speak."),
  rest(400, "session_required", "MCP endpoint: send the `Mcp-Session-Id` that `initialize` returned."),
  rest(401, "missing_api_key", "No `x-api-key` header."),
  rest(401, "malformed_api_key", "The `x-api-key` header is not a Switchyard key (`sy_<id>_<secret>`)."),
  rest(401, "invalid_api_key", "An unknown key, a wrong secret, a removed member's key, or an expired caller token."),
  rest(401, "revoked_api_key", "The key was revoked: create a new one."),
  rest(
    401,
    "bearer_not_supported",
    "`Authorization: Bearer` on REST, which takes `x-api-key` (Bearer is the MCP endpoint's scheme)."
  ),
  rest(
    401,
    "unauthenticated",
    "Not authenticated; the default of the 401 error, whose answers today each name a code above."
  ),
  rest(
    401,
    "missing_token",
    "MCP endpoint: no `Authorization: Bearer` token; `WWW-Authenticate` points at the resource metadata."
  ),
  rest(401, "api_key_not_accepted", "MCP endpoint: `x-api-key` instead of an OAuth access token."),
  rest(
    401,
    "invalid_session",
    "Web console: no console session, or it ended (12 hours, or signed out): sign in again."
  ),
  rest(
    401,
    "csrf_token_invalid",
    "Web console: a changing request with the session cookie but without its `x-csrf-token`, or from another origin."
  ),
  rest(401, "invalid_credentials", "Web console sign-in: wrong e-mail or password."),
  rest(401, "invalid_token", "MCP endpoint: a bad, expired, revoked or foreign-audience access token."),
  rest(
    402,
    "budget_exhausted",
    "The agent's budget for this period is spent: raise it (`PATCH`) or wait for the next period."
  ),
  rest(403, "forbidden", "The caller's role does not allow this (recorded in the audit log as `ACCESS_DENIED`)."),
  rest(
    403,
    "skill_not_allowed",
    "Under `SERVICE_SKILL_VISIBILITY_MODE=enforce`, a skill whose visibility does not admit the agent."
  ),
  rest(
    403,
    "egress_refused",
    "Connector invoke: the target (or its OAuth2 token endpoint) resolves to an internal address; allow it in " +
      "`SWITCHYARD_EGRESS_ALLOW`."
  ),
  rest(
    403,
    "insufficient_scope",
    "MCP endpoint: a tool beyond the access token's scope (`mcp:read`: read-only tools; `mcp:write`: all)."
  ),
  rest(403, "forbidden_origin", "MCP endpoint: a request from a foreign `Origin`."),
  rest(404, "not_found", "No such resource that the caller can see (another organization's ids included)."),
  rest(404, "route_not_found", "No route has this path."),
  rest(
    404,
    "session_not_found",
    "MCP endpoint: the session is unknown, ended or another user's; initialize a new one."
  ),
  rest(
    405,
    "method_not_allowed",
    "The path exists, not with this method; the `Allow` header lists the methods it takes."
  ),
  rest(406, "not_acceptable", "MCP endpoint: a `GET` without `Accept: text/event-stream`."),
  rest(409, "already_member", "The person is a member of this organization already."),
  rest(409, "last_super_admin", "The change would leave the organization without a Super admin."),
  rest(409, "group_name_taken", "A group of that name (case-insensitively) exists in this organization."),
  rest(409, "already_in_group", "The member is in the group already."),
  rest(409, "skill_name_taken", "A skill of that name exists in this organization."),
  rest(
    409,
    "knowledge_base_name_taken",
    "A knowledge base of that name (case-insensitively) exists in this organization."
  ),
  rest(409, "function_name_taken", "A custom function of that name exists in this organization."),
  rest(409, "file_exists", "A workspace file of that name is in the scope already: upload with `overwrite=true`."),
  rest(409, "approval_decided", "The request for approval was decided (or expired) already."),
  rest(
    409,
    "task_ended",
    "`POST /v1/tasks/{task_id}/cancel` of a task that ended already (completed, error, cancelled)."
  ),
  rest(
    409,
    "webhook_disabled",
    "A webhook ping or retry while the endpoint is disabled (`disabled_reason`): enable it with `PATCH` first."
  ),
  rest(
    409,
    "webhook_limit_reached",
    "The organization has as many webhook endpoints as it may (`SWITCHYARD_WEBHOOK_MAX_ENDPOINTS`, default 50; " +
      "`details.limit`), disabled ones included: delete one, or have an operator raise the limit."
  ),
  rest(409, "idempotency_conflict", "This `Idempotency-Key` was used with a different request body."),
  rest(
    409,
    "connection_pending_authorization",
    "The connection's OAuth2 sign-in is not finished: open its `connector_page_url`."
  ),
  rest(
    409,
    "connection_needs_reauthentication",
    "The provider refused a token refresh: `POST /v1/tools/connections/{id}/authorize` and sign in again (a " +
      "client-credentials connection: `PATCH` its `credentials`)."
  ),
  rest(409, "connection_not_found", "The connection or its connector was removed while the call was being prepared."),
  rest(409, "conflict", "The request conflicts with the current state; the default of the 409 error."),
  rest(408, "request_timeout", "The request's headers or body did not arrive in time; the connection is closed."),
  rest(
    410,
    "events_expired",
    "`Last-Event-ID` names an event older than the retention window (`SWITCHYARD_EVENT_RETENTION`): events " +
      "after it were pruned. Start again with `Last-Event-ID: 0` (the oldest kept), and reconcile by reading state."
  ),
  rest(
    413,
    "payload_too_large",
    "The body is larger than `SWITCHYARD_MAX_BODY_BYTES`; a chunked body that grows past it has its connection " +
      "closed."
  ),
  rest(
    413,
    "file_too_large",
    "A workspace file upload past `SWITCHYARD_MAX_FILE_BYTES`: nothing is stored; what the client still sends is " +
      "dropped for up to 2 s, then its connection is closed."
  ),
  rest(
    413,
    "storage_quota_exceeded",
    "A workspace file that does not fit in what the organization's files may take in all " +
      "(`SWITCHYARD_ORG_FILE_QUOTA_BYTES`, default 10 GiB): nothing is stored; the message says what the files take. " +
      "Delete files, or have an operator raise the quota."
  ),
  rest(
    413,
    "document_too_large",
    "A knowledge document (inline text, workspace file or fetched URL) past `SWITCHYARD_MAX_DOCUMENT_BYTES` " +
      "(default 25 MiB)."
  ),
  rest(
    416,
    "range_not_satisfiable",
    "Workspace file content: the `Range` starts past the end of the file; `Content-Range: bytes */<size>` says its size."
  ),
  rest(
    415,
    "unsupported_media_type",
    "A body whose `Content-Type` is missing, or neither `application/json` nor `application/*+json`."
  ),
  rest(
    415,
    "unsupported_document_type",
    "A knowledge document that is not text, Markdown, HTML or PDF (by its Content-Type, else its name's " +
      "extension): convert it, or name the format with `format`."
  ),
  rest(
    431,
    "headers_too_large",
    "The request line and headers are larger than this server reads (16 KiB): shorten the URL or the headers; " +
      "the connection is closed."
  ),
  rest(
    422,
    "sso_issuer_unreachable",
    "Single sign-on: the issuer's OpenID configuration cannot be read (the message says why, e.g. the egress " +
      "guard)."
  ),
  rest(
    422,
    "sso_issuer_not_oidc",
    "Single sign-on: the issuer answers, but not as an OpenID provider of that issuer with code flow and PKCE S256."
  ),
  rest(
    422,
    "connector_has_no_server_url",
    "Connector invoke: the document's server is relative and no `server_url` was given."
  ),
  rest(
    422,
    "path_outside_server_url",
    "Connector invoke: the operation's path would leave the server URL's base path."
  ),
  rest(
    422,
    "webhook_url_not_allowed",
    "A webhook `url` that resolves to an internal address (loopback, private, link-local, metadata); an operator " +
      "can allow it with `SWITCHYARD_EGRESS_ALLOW`."
  ),
  rest(
    422,
    "document_url_not_allowed",
    "A knowledge document's `url` (or a redirect of it) resolves to an internal address; an operator can allow " +
      "it with `SWITCHYARD_EGRESS_ALLOW`. (A `url` that is not http(s) is 400 `validation_failed`.)"
  ),
  rest(
    422,
    "document_url_unreachable",
    "A knowledge document's `url` could not be fetched: no answer within 30 s, an error status " +
      "(`details.status`), more than 5 redirects."
  ),
  rest(
    422,
    "function_error",
    "A custom function threw: the message names its error and line, `details.stack` and `details.logs` follow."
  ),
  rest(422, "function_memory", "A custom function used more than its `memory_mb` and was stopped."),
  rest(422, "function_output_too_large", "A custom function returned more than 1 MiB of JSON."),
  rest(422, "unprocessable", "Well-formed but unusable input; the default of the 422 error."),
  rest(
    429,
    "rate_limited",
    "Too many failed attempts: retry after `Retry-After` seconds (also `details.retry_after_seconds`)."
  ),
  rest(500, "internal_error", "A bug on our side; nothing internal is sent: quote the `request_id`."),
  rest(
    502,
    "upstream_unreachable",
    "Connector invoke: the target (or its OAuth2 token endpoint) could not be reached or gave no token (a `POST` or " +
      "`PATCH` is never resent)."
  ),
  rest(
    503,
    "functions_busy",
    "This node's function sandbox has 1,000 calls waiting, or no worker was free to check new code within its " +
      "timeout_ms: retry shortly."
  ),
  rest(503, "database_unavailable", "The database is unavailable right now: retry after `Retry-After`."),
  rest(
    503,
    "database_conflict",
    "The request's transaction was rolled back for a concurrent one (a deadlock or serialization failure) and " +
      "kept nothing: send it again after `Retry-After` (with the same `Idempotency-Key` where it creates something)."
  ),
  rest(
    503,
    "unavailable",
    "The node is starting, stopping or not ready (`/readyz` says why), or the request was interrupted: retry."
  ),
  rest(
    504,
    "function_timeout",
    "A custom function ran longer than its `timeout_ms` (waiting on `ctx` included) and was stopped."
  ),
  rest(
    504,
    "upstream_timeout",
    "Connector invoke: no complete answer within `SWITCHYARD_CONNECTOR_TIMEOUT`; the upstream request is aborted."
  ),
  model(
    "model_not_configured",
    "No key or endpoint for the agent's provider: set the organization's model provider or the deployment's " +
      "variables."
  ),
  model(
    "model_egress_refused",
    "A model endpoint set by a user resolves to an internal address; allow it in `SWITCHYARD_EGRESS_ALLOW`."
  ),
  model("model_unreachable", "The model endpoint could not be reached."),
  model("model_http_error", "The model endpoint answered with an HTTP error (a wrong key, an unknown model, a limit)."),
  model("model_bad_response", "The model endpoint's answer could not be read as its protocol's."),
  model(
    "model_bad_usage",
    "The model endpoint reported token counts no call can have (not whole numbers from 0 to 2,147,483,647, or " +
      "more cached than input), or the call's cost at the configured prices is more than a call's record holds: " +
      "the call is not counted, and the task ends."
  ),
  model("model_stream_error", "The model's streamed answer broke off or reported an error."),
  model("script_exhausted", "A `scripted` model was asked for more turns than its `script` holds."),
  model("max_steps", "The built-in agent's `ask` made its 10 model calls without a final answer."),
  oauth(
    400,
    "invalid_request",
    "A parameter is missing, repeated or malformed (PKCE `S256` is required), or the URL or form holds the NUL " +
      "character; at `/oauth/authorize` it is sent back to the client's redirect URI once the client and that URI " +
      "are known, and shown otherwise."
  ),
  oauth(405, "invalid_request", "The endpoint does not take this method: the `Allow` header lists the ones it does."),
  oauth(
    413,
    "invalid_request",
    "The body is larger than `SWITCHYARD_MAX_BODY_BYTES` (`invalid_client_metadata` at `/oauth/register`)."
  ),
  oauth(
    400,
    "invalid_client",
    "Unknown `client_id`, or a client metadata document that could not be fetched (the reason is logged, not sent) " +
      "or is not valid; at `/oauth/authorize` shown, never sent to a redirect URI."
  ),
  oauth(401, "invalid_client", "Client authentication failed: a wrong secret or malformed HTTP Basic credentials."),
  oauth(
    400,
    "invalid_grant",
    "The code or refresh token is unknown, used, expired, revoked, another client's, or fails PKCE."
  ),
  oauth(400, "invalid_scope", "A refresh asked for more scope than was granted."),
  oauth(400, "invalid_target", "`resource` is not the one the grant was issued for."),
  oauth(
    302,
    "invalid_target",
    "Sent back to the client's redirect URI: the authorization request's `resource` is no protected resource of " +
      "this server."
  ),
  oauth(400, "unsupported_grant_type", "Use `authorization_code` or `refresh_token`."),
  oauth(
    302,
    "unsupported_response_type",
    "Sent back to the client's redirect URI: only `response_type=code` is supported."
  ),
  oauth(
    302,
    "access_denied",
    "Sent back to the client's redirect URI: the person denied the request on the consent page."
  ),
  oauth(
    400,
    "invalid_client_metadata",
    "Client registration: the metadata is not JSON (or nests deeper than 64 levels, or holds NUL), or has an " +
      "unknown scope, more than 20 `redirect_uris`, a `client_uri` that is not http(s), or another bad field."
  ),
  oauth(415, "invalid_client_metadata", "Client registration: send the metadata as `application/json`."),
  oauth(
    400,
    "invalid_redirect_uri",
    "Client registration: a redirect URI that is neither https nor http on 127.0.0.1, [::1] or localhost."
  ),
  oauth(
    429,
    "rate_limited",
    "Too many registrations from this address, or wrong secrets for this client: retry after `Retry-After`."
  ),
  oauth(404, "not_found", "No such OAuth resource on this server."),
  oauth(500, "server_error", "A bug on our side; nothing internal is sent: quote the response's `x-request-id`."),
  oauth(
    503,
    "temporarily_unavailable",
    "The node is stopping, the database is unavailable, or the request was interrupted: retry (after " +
      "`Retry-After` when given)."
  )
]
