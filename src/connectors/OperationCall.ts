import type { Dispatcher } from "undici"
import type { AppliedCredentials, ConnectionUnusable } from "../../cluster/ConnectionEntity.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import type { ConnectionId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import type { Invocation } from "./InvocationRecorder.js"
import { type InvokeTarget, prepareCall, type Prepared } from "./PreparedCall.js"
import {
  type CallFailure,
  passThroughHeaders,
  startUpstream,
  type UpstreamBody,
  type UpstreamCall,
  type UpstreamReply
} from "./Upstream.js"

/**
 * Calling one connector operation, the one way every transport does it (the REST route and its plain-Node
 * fast path, the MCP tool and its fast path, agents' tool calls): prepare the request (PreparedCall.ts), pick
 * the way out (the egress guard, or this node's own API for the built-in Switchyard connector), send it,
 * refresh an OAuth2 token the target refused once, classify a failure, and record the invocation once.
 *
 * Plain promises, no Effect: the fast paths run it as it is; OperationInvoker wraps it as an Effect for the
 * general stack. What it cannot know from memory (credentials not cached, a token refresh) it asks through
 * `CredentialSource`, which the invoker backs with the Connection entity.
 */

export interface InvokeContext {
  readonly taskId?: string
  /** The end user's OAuth token (spec 5.1.6), for connections that sign in as the user. */
  readonly userToken?: string
}

/** The target's answer, passed on: hop-by-hop and Switchyard's own headers already dropped. */
export interface Answered {
  readonly _tag: "Answered"
  readonly status: number
  readonly headers: Record<string, string | Array<string>>
  readonly body: UpstreamBody
}

/** One of our errors instead of the target's answer: the REST status and the envelope's fields. */
export interface CallRefusal {
  readonly status: 400 | 403 | 409 | 422 | 499 | 502 | 504
  readonly code: string
  readonly message: string
  readonly details?: unknown
}

export type CallOutcome = Answered | ({ readonly _tag: "Refused" } & CallRefusal)

export interface OperationCall {
  /** Rejects only on a defect (ours, never the target's or the caller's doing). */
  readonly outcome: Promise<CallOutcome>
  /** The caller went away: aborts the upstream request (and its response body) or keeps it from being sent. */
  readonly abort: () => void
}

export type Credentialed =
  | { readonly ok: true; readonly credentials: AppliedCredentials }
  | { readonly ok: false; readonly unusable: ConnectionUnusable }

export interface CredentialSource {
  /** This node's unexpired copy, or undefined. */
  readonly peek: (id: ConnectionId) => AppliedCredentials | undefined
  /** From the connection's entity; `stale`: the target refused the token we have, refresh it. */
  readonly fetch: (id: ConnectionId, stale: boolean) => Promise<Credentialed>
}

/** The built-in Switchyard connector's target: this node's own API, called as the caller (OwnApi.ts). */
export interface OwnApiTarget {
  readonly origin: string
  readonly serves: (connector: InvokeTarget["connector"]) => boolean
  readonly credentialsFor: (principal: Principal) => AppliedCredentials
  readonly dispatcherFor: (url: string) => Dispatcher | undefined
}

export interface OperationCallSetup {
  /** The egress-guarded way out (Egress.ts). */
  readonly dispatcher: Dispatcher
  /** Why a request that never got an answer failed (Upstream.classifyFailure with the egress guard). */
  readonly classify: (error: unknown) => CallFailure
  readonly ownApi: OwnApiTarget
  readonly credentials: CredentialSource
  /** Takes the record of one invocation (InvocationRecorder). */
  readonly record: (invocation: Invocation) => void
  readonly timeoutMs: number
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

type NotPrepared = Extract<Prepared, { ok: false }>

const notPrepared = (p: NotPrepared): CallOutcome => ({
  _tag: "Refused",
  status: p.status,
  code: p.code,
  message: p.message,
  ...(p.details === undefined ? {} : { details: p.details })
})

/** A connection that cannot be used now is the caller's to fix (409), unless its secret is unreadable: ours. */
const unusable = (e: ConnectionUnusable): CallOutcome => {
  if (e.code === "connection_credentials_unreadable") {
    throw new Error(`connection credentials unreadable: ${e.message}`)
  }
  return { _tag: "Refused", status: 409, code: e.code, message: e.message }
}

/** Not on the wire (the caller is gone); recorded, so the invocations say what became of the call. */
const CALLER_GONE: CallOutcome = {
  _tag: "Refused",
  status: 499,
  code: "caller_gone",
  message: "The caller went away before the target answered."
}

/** Builds the call function from this node's parts; OperationInvoker does it once. */
export const makeOperationCall = (setup: OperationCallSetup) =>
(
  principal: Principal,
  target: InvokeTarget,
  input: InvokeOperation,
  context: InvokeContext = {}
): OperationCall => {
  const started = performance.now()
  const { ownApi } = setup
  const self = ownApi.serves(target.connector)
  let current: UpstreamCall | undefined
  let aborted = false
  let base: ReturnType<typeof invocationOf> | undefined

  const record = (status: number | null, errorCode: string | null, responseBytes: number | null) =>
    setup.record({
      ...base!,
      status,
      error_code: errorCode,
      response_bytes: responseBytes,
      duration_ms: performance.now() - started
    })

  const prepare = (credentials: AppliedCredentials) =>
    self
      ? prepareCall(target, input, credentials, undefined, ownApi.origin)
      : prepareCall(target, input, credentials, context.userToken)

  const send = (request: Extract<Prepared, { ok: true }>["request"], dispatcher: Dispatcher) => {
    current = startUpstream(request.url, request, dispatcher, setup.timeoutMs)
    return current.response
  }

  const failed = (error: unknown): CallOutcome => {
    if (aborted) {
      record(null, CALLER_GONE.code, null)
      return CALLER_GONE
    }
    const failure = setup.classify(error)
    record(null, failure.code, null)
    return { _tag: "Refused", ...failure }
  }

  const answered = (response: UpstreamReply): CallOutcome => {
    const length = Number(response.headers["content-length"])
    record(response.statusCode, null, Number.isFinite(length) ? length : null)
    return {
      _tag: "Answered",
      status: response.statusCode,
      headers: passThroughHeaders(response.headers),
      body: response.body
    }
  }

  /** The target refused our OAuth2 token: it may have been revoked early; refresh once (cluster-wide) and retry. */
  const refreshed = (response: UpstreamReply, dispatcher: Dispatcher): Promise<CallOutcome> => {
    response.body.dump()
    return setup.credentials.fetch(target.connection.id, true).then((fresh) => {
      if (!fresh.ok) {
        record(401, fresh.unusable.code, null)
        return unusable(fresh.unusable)
      }
      if (aborted) return failed(undefined)
      const again = prepare(fresh.credentials)
      if (!again.ok) {
        record(401, again.code, null)
        return notPrepared(again)
      }
      return send(again.request, dispatcher).then(answered, failed)
    })
  }

  const call = (credentials: AppliedCredentials): Promise<CallOutcome> => {
    if (aborted) return Promise.resolve(CALLER_GONE)
    const prepared = prepare(credentials)
    if (!prepared.ok) return Promise.resolve(notPrepared(prepared))
    const { request } = prepared
    const dispatcher = self ? ownApi.dispatcherFor(request.url) : setup.dispatcher
    if (dispatcher === undefined) return Promise.reject(new Error(`own API call left its origin: ${request.url}`))
    base = invocationOf(principal, target, context.taskId ?? null, prepared.requestBytes)
    const refreshes = !self && target.connection.auth_type === "oauth2"
    return send(request, dispatcher).then(
      (response) =>
        refreshes && response.statusCode === 401 && !aborted ? refreshed(response, dispatcher) : answered(response),
      failed
    )
  }

  // the built-in Switchyard connector acts as the caller: no stored credentials, this node's own API
  let outcome: Promise<CallOutcome>
  try {
    const cached = self ? ownApi.credentialsFor(principal) : setup.credentials.peek(target.connection.id)
    outcome = cached !== undefined
      ? call(cached)
      : setup.credentials.fetch(target.connection.id, false).then((c) =>
        c.ok ? call(c.credentials) : unusable(c.unusable)
      )
  } catch (defect) {
    outcome = Promise.reject(defect)
  }
  return {
    outcome,
    abort: () => {
      aborted = true
      current?.abort()
    }
  }
}

export type CallOperation = ReturnType<typeof makeOperationCall>
