import { Duration, Effect } from "effect"
import type { Readable } from "node:stream"
import type { Dispatcher } from "undici"
import type { ConnectionUnusable } from "../../cluster/ConnectionEntity.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import { BadGateway, BadRequest, Conflict, Forbidden, GatewayTimeout, Unprocessable } from "../../schema/Errors.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectionCredentials } from "./ConnectionCredentials.js"
import { Egress } from "./Egress.js"
import { type Invocation, InvocationRecorder } from "./InvocationRecorder.js"
import { OwnApi } from "./OwnApi.js"
import { type InvokeTarget, prepareCall } from "./PreparedCall.js"
import { type CallFailure, classifyFailure, passThroughHeaders, startUpstream } from "./Upstream.js"

export type { InvokeTarget }

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

/** The invocation record of a call, without its outcome. */
export const invocationOf = (
  principal: Principal,
  target: InvokeTarget,
  taskId: string | null,
  requestBytes: number
) => ({
  organization_id: principal.organizationId,
  connector_id: target.connector.id,
  connection_id: target.connection.id,
  operation_id: target.operation.id,
  api_key_id: principal.keyId,
  user_id: principal.userId,
  task_id: taskId,
  request_bytes: requestBytes
})

const failureError = (f: CallFailure) =>
  f.status === 403
    ? Forbidden.of(f.message, f.code)
    : f.status === 504
    ? GatewayTimeout.of(f.message)
    : BadGateway.of(f.message, f.code)

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
    const ownApi = yield* OwnApi
    const timeoutMs = Math.max(1, Duration.toMillis(config.connectorTimeout))

    /** Interrupting the caller aborts the upstream request as well. */
    const send = (url: string, init: Parameters<typeof startUpstream>[1], dispatcher: Dispatcher) =>
      Effect.async<Awaited<ReturnType<typeof startUpstream>["response"]>, CallFailure>((resume) => {
        const call = startUpstream(url, init, dispatcher, timeoutMs)
        call.response.then(
          (r) => resume(Effect.succeed(r)),
          (e) => resume(Effect.fail(classifyFailure(e, egress, timeoutMs)))
        )
        return Effect.sync(call.abort)
      })

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
      const started = performance.now()
      // the built-in Switchyard connector acts as the caller: no stored credentials, this node's own API
      const self = ownApi.serves(target.connector)
      const stored = self
        ? ownApi.credentialsFor(principal)
        : yield* credentials.get(target.connection.id).pipe(Effect.catchAll(unusable))
      const prepared = self
        ? prepareCall(target, input, stored, undefined, ownApi.origin)
        : prepareCall(target, input, stored, context.userToken)
      if (!prepared.ok) {
        return yield* prepared.status === 422
          ? Unprocessable.of(prepared.message, prepared.code)
          : BadRequest.of(prepared.message, prepared.details, prepared.code)
      }
      const base = invocationOf(principal, target, context.taskId ?? null, prepared.requestBytes)
      const record = (outcome: Pick<Invocation, "status" | "error_code" | "response_bytes">) =>
        recorder.record({ ...base, ...outcome, duration_ms: performance.now() - started })
      const { request } = prepared
      const dispatcher = self ? ownApi.dispatcherFor(request.url) : egress.dispatcher
      if (dispatcher === undefined) return yield* Effect.dieMessage(`own API call left its origin: ${request.url}`)
      const sendTo = (headers: Record<string, string>) =>
        send(request.url, { method: request.method, headers, body: request.body }, dispatcher).pipe(
          Effect.tapError((f) => record({ status: null, error_code: f.code, response_bytes: null })),
          Effect.mapError(failureError)
        )
      let response = yield* sendTo(request.headers)
      if (response.statusCode === 401 && !self && target.connection.auth_type === "oauth2") {
        // the token may have been revoked early: refresh once (the entity makes it cluster-wide) and retry
        response.body.resume()
        const fresh = yield* credentials.get(target.connection.id, { staleToken: true }).pipe(Effect.catchAll(unusable))
        const again = prepareCall(target, input, fresh, context.userToken)
        if (again.ok) response = yield* sendTo(again.request.headers)
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
