import { Duration, Effect, Redacted } from "effect"
import type { Readable } from "node:stream"
import { type Dispatcher, type FormData, request } from "undici"
import type { ConnectionUnusable } from "../../cluster/ConnectionEntity.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import { BadGateway, BadRequest, Conflict, Forbidden, GatewayTimeout, Unprocessable } from "../../schema/Errors.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectionCredentials } from "./ConnectionCredentials.js"
import type { ConnectionRow, ConnectorRow } from "./ConnectorRepo.js"
import { Egress } from "./Egress.js"
import { InvocationRecorder } from "./InvocationRecorder.js"
import { validatorFor } from "./openapi/InputValidator.js"
import type { ImportedOperation } from "./openapi/OpenApiImport.js"
import { buildRequest } from "./RequestBuilder.js"

export interface UpstreamResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string>>
  readonly body: Readable
}

export interface InvokeContext {
  readonly taskId?: string
  /** The end user's OAuth token (spec 5.1.6), for connections that sign in as the user. */
  readonly userToken?: string
}

/**
 * A connection with no credentials of its own, to an API that signs users in with OAuth2/OIDC, calls
 * it with the token of the user who asked, when the caller has one.
 */
const wantsUserToken = (target: InvokeTarget) =>
  target.connection.auth_type === "none" &&
  Object.values(target.connector.imported.securitySchemes).some((s) =>
    s.type === "oauth2" || s.type === "openIdConnect"
  )

export interface InvokeTarget {
  readonly connector: ConnectorRow
  readonly connection: ConnectionRow
  readonly operation: ImportedOperation
}

// hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the message we pass on
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

const passThroughHeaders = (headers: Record<string, string | Array<string> | undefined>) => {
  const out: Record<string, string | Array<string>> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value
  }
  return out
}

/**
 * Runs one connector operation: validates the input against the operation's schema, builds the request
 * with the spec's method, applies the connection's credentials (from memory), and returns the target's
 * response as a stream. Shared by the REST endpoint and agent tool calls.
 */
export class OperationInvoker extends Effect.Service<OperationInvoker>()("connectors/OperationInvoker", {
  effect: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const egress = yield* Egress
    const credentials = yield* ConnectionCredentials
    const recorder = yield* InvocationRecorder
    const timeoutMs = Math.max(1, Duration.toMillis(config.connectorTimeout))

    /**
     * One timer covers the whole exchange, streaming of the response included (spec 4.5: 300 s); it is
     * cleared when the body is done. Interrupting the caller aborts the upstream request as well.
     */
    const send = (
      url: string,
      init: { method: string; headers: Record<string, string>; body: string | FormData | undefined }
    ) =>
      Effect.async<Dispatcher.ResponseData, unknown>((resume) => {
        const controller = new AbortController()
        const timer = setTimeout(() => controller.abort(new DOMException("timeout", "TimeoutError")), timeoutMs)
        request(url, {
          method: init.method.toUpperCase() as "GET",
          headers: init.headers,
          body: init.body ?? null,
          dispatcher: egress.dispatcher,
          signal: controller.signal,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs
        }).then(
          (response) => {
            response.body.once("close", () => clearTimeout(timer))
            resume(Effect.succeed(response))
          },
          (error) => {
            clearTimeout(timer)
            resume(Effect.fail(error))
          }
        )
        return Effect.sync(() => {
          clearTimeout(timer)
          controller.abort()
        })
      }).pipe(
        Effect.mapError((error: any) => {
          if (egress.refusal(error) !== undefined) return Forbidden.of(egress.explain(error), "egress_refused")
          if (error?.name === "TimeoutError" || error?.code === "UND_ERR_HEADERS_TIMEOUT") {
            return GatewayTimeout.of(
              `The target API did not answer within ${timeoutMs / 1000} s (SWITCHYARD_CONNECTOR_TIMEOUT).`
            )
          }
          return BadGateway.of(`The target API could not be reached: ${egress.explain(error)}.`)
        })
      )

    /** A connection that cannot be used now is the caller's to fix (409), unless its secret is unreadable: ours. */
    const unusable = (e: ConnectionUnusable) =>
      e.code === "connection_credentials_unreadable"
        ? Effect.die(new Error(`connection credentials unreadable: ${e.message}`))
        : Effect.fail(Conflict.of(e.message, e.code))

    // untraced: this is the hot path, and a span and a stack capture per call cost more than they tell
    const invoke = Effect.fnUntraced(function*(
      principal: Principal,
      target: InvokeTarget,
      input: InvokeOperation,
      context: InvokeContext = {}
    ) {
      const { connection, connector, operation } = target
      const started = performance.now()
      const checked = validatorFor(operation)(input)
      if (!checked.ok) {
        const first = checked.issues[0]!
        return yield* BadRequest.of(
          `\`${first.path}\`: ${first.message}${
            checked.issues.length > 1 ? ` (and ${checked.issues.length - 1} more)` : ""
          }`,
          { issues: checked.issues },
          "validation_failed"
        )
      }
      const stored = yield* credentials.get(connection.id).pipe(Effect.catchAll(unusable))
      const applied = context.userToken !== undefined && wantsUserToken(target)
        ? { ...stored, headers: { ...stored.headers, authorization: Redacted.make(`Bearer ${context.userToken}`) } }
        : stored
      const built = buildRequest({
        baseUrl: connection.server_url ?? connector.server_url ?? connector.imported.servers[0],
        operation,
        input,
        credentials: {
          headers: Object.fromEntries(Object.entries(applied.headers).map(([k, v]) => [k, Redacted.value(v)])),
          query: Object.fromEntries(Object.entries(applied.query).map(([k, v]) => [k, Redacted.value(v)])),
          cookies: Object.fromEntries(Object.entries(applied.cookies).map(([k, v]) => [k, Redacted.value(v)]))
        }
      })
      if (!built.ok) {
        return yield* built.kind === "connector"
          ? Unprocessable.of(built.message, "connector_has_no_server_url")
          : BadRequest.of(built.message, undefined, built.code)
      }
      const record = (outcome: { status: number | null; error_code: string | null; response_bytes: number | null }) =>
        recorder.record({
          organization_id: principal.organizationId,
          connector_id: connector.id,
          connection_id: connection.id,
          operation_id: operation.id,
          api_key_id: principal.keyId,
          user_id: principal.userId,
          task_id: context.taskId ?? null,
          duration_ms: performance.now() - started,
          request_bytes: typeof built.body === "string" ? Buffer.byteLength(built.body) : 0,
          ...outcome
        })
      const recordFailure = (e: { readonly code: string }) =>
        record({ status: null, error_code: e.code, response_bytes: null })
      let response = yield* send(built.url, built).pipe(Effect.tapError(recordFailure))
      if (response.statusCode === 401 && connection.auth_type === "oauth2") {
        // the token may have been revoked early: refresh once (the entity makes it cluster-wide) and retry
        response.body.resume()
        const fresh = yield* credentials.get(connection.id, { staleToken: true }).pipe(Effect.catchAll(unusable))
        const auth = fresh.headers["authorization"]
        if (auth !== undefined) {
          response = yield* send(built.url, {
            ...built,
            headers: { ...built.headers, authorization: Redacted.value(auth) }
          })
            .pipe(Effect.tapError(recordFailure))
        }
      }
      const length = Number(response.headers["content-length"])
      yield* record({
        status: response.statusCode,
        error_code: null,
        response_bytes: Number.isFinite(length) ? length : null
      })
      return {
        status: response.statusCode,
        headers: passThroughHeaders(response.headers),
        body: response.body as unknown as Readable
      } satisfies UpstreamResponse
    })

    return { invoke } as const
  })
}) {}
