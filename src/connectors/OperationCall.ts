import type { Tracer } from "effect"
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
  /** The caller's span, for the call's own (while spans are exported). */
  readonly parentSpan?: Tracer.AnySpan | undefined
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
  abort(): void
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
  /** Metrics and spans of each call (src/observability); undefined while both are off. */
  readonly observer?: CallObserver | undefined
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

/** Statuses of the token endpoint's failures: those of a target's (Upstream.classifyFailure). */
const TOKEN_FAILURE_STATUS = { egress_refused: 403, upstream_unreachable: 502, upstream_timeout: 504 } as const

/**
 * A connection that cannot be used now is the caller's to fix (409), unless its secret is unreadable (ours) or
 * its OAuth2 token endpoint failed (the target's side: 403, 502, 504 as for the target itself).
 */
const unusable = (e: ConnectionUnusable): CallOutcome => {
  if (e.code === "connection_credentials_unreadable") {
    throw new Error(`connection credentials unreadable: ${e.message}`)
  }
  const status = e.code in TOKEN_FAILURE_STATUS
    ? TOKEN_FAILURE_STATUS[e.code as keyof typeof TOKEN_FAILURE_STATUS]
    : 409
  return { _tag: "Refused", status, code: e.code, message: e.message }
}

/** Not on the wire (the caller is gone); recorded, so the invocations say what became of the call. */
const CALLER_GONE: CallOutcome & CallRefusal = {
  _tag: "Refused",
  status: 499,
  code: "caller_gone",
  message: "The caller went away before the target answered."
}

/**
 * One call in flight: a class, so a call allocates one object and no closures (the hot path runs thousands a
 * second).
 */
class CallInFlight implements OperationCall {
  readonly outcome: Promise<CallOutcome>
  private readonly started = performance.now()
  /** The built-in Switchyard connector acts as the caller: no stored credentials, this node's own API. */
  private readonly self: boolean
  private current: UpstreamCall | undefined
  private aborted = false
  private base: ReturnType<typeof invocationOf> | undefined
  /** The call's span while it is open: ended with the outcome (`ended`), where the outcome is made. */
  private span: Tracer.Span | undefined

  constructor(
    private readonly setup: OperationCallSetup,
    private readonly principal: Principal,
    private readonly target: InvokeTarget,
    private readonly input: InvokeOperation,
    private readonly context: InvokeContext
  ) {
    this.self = setup.ownApi.serves(target.connector)
    this.span = setup.observer?.begin(target, context.parentSpan)
    let outcome: Promise<CallOutcome>
    try {
      const cached = this.self ? setup.ownApi.credentialsFor(principal) : setup.credentials.peek(target.connection.id)
      outcome = cached !== undefined
        ? this.call(cached)
        : setup.credentials.fetch(target.connection.id, false).then(
          (c) => c.ok ? this.call(c.credentials) : this.unusable(c.unusable),
          (defect) => this.defect(defect)
        )
    } catch (defect) {
      outcome = this.defect(defect)
    }
    this.outcome = outcome
  }

  /** Ends the span with `outcome` (undefined: a defect), once; no promise reaction of its own per call. */
  private ended(outcome: CallOutcome | undefined) {
    const span = this.span
    if (span === undefined) return
    this.span = undefined
    this.setup.observer!.end(span, outcome)
  }

  private done(outcome: CallOutcome): CallOutcome {
    this.ended(outcome)
    return outcome
  }

  private defect(defect: unknown): Promise<never> {
    this.ended(undefined)
    return Promise.reject(defect)
  }

  private unusable(e: ConnectionUnusable): CallOutcome {
    let outcome: CallOutcome
    try {
      outcome = unusable(e)
    } catch (defect) {
      this.ended(undefined)
      throw defect
    }
    return this.done(outcome)
  }

  abort() {
    this.aborted = true
    this.current?.abort()
  }

  private record(status: number | null, errorCode: string | null, responseBytes: number | null) {
    const base = this.base!
    this.setup.observer?.record?.(this.target, status, performance.now() - this.started)
    this.setup.record({
      organization_id: base.organization_id,
      connector_id: base.connector_id,
      connection_id: base.connection_id,
      operation_id: base.operation_id,
      api_key_id: base.api_key_id,
      user_id: base.user_id,
      task_id: base.task_id,
      request_bytes: base.request_bytes,
      status,
      error_code: errorCode,
      response_bytes: responseBytes,
      duration_ms: performance.now() - this.started
    })
  }

  private prepare(credentials: AppliedCredentials) {
    return this.self
      ? prepareCall(this.target, this.input, credentials, undefined, this.setup.ownApi.origin)
      : prepareCall(this.target, this.input, credentials, this.context.userToken)
  }

  private send(request: Extract<Prepared, { ok: true }>["request"], dispatcher: Dispatcher) {
    if (this.span !== undefined) this.setup.observer!.outgoing(this.span, request.headers)
    this.current = startUpstream(request.url, request, dispatcher, this.setup.timeoutMs)
    return this.current.response
  }

  private failed(error: unknown): CallOutcome {
    if (this.aborted) {
      this.record(null, CALLER_GONE.code, null)
      return this.done(CALLER_GONE)
    }
    const failure = this.setup.classify(error)
    this.record(null, failure.code, null)
    return this.done({ _tag: "Refused", ...failure })
  }

  private answered(response: UpstreamReply): CallOutcome {
    const length = Number(response.headers["content-length"])
    this.record(response.statusCode, null, Number.isFinite(length) ? length : null)
    return this.done({
      _tag: "Answered",
      status: response.statusCode,
      headers: passThroughHeaders(response.headers),
      body: response.body
    })
  }

  /** The target refused our OAuth2 token: it may have been revoked early; refresh once (cluster-wide) and retry. */
  private refreshed(response: UpstreamReply, dispatcher: Dispatcher): Promise<CallOutcome> {
    response.body.dump()
    return this.setup.credentials.fetch(this.target.connection.id, true).then((fresh) => {
      if (!fresh.ok) {
        this.record(401, fresh.unusable.code, null)
        return this.unusable(fresh.unusable)
      }
      if (this.aborted) return this.failed(undefined)
      const again = this.prepare(fresh.credentials)
      if (!again.ok) {
        this.record(401, again.code, null)
        return this.done(notPrepared(again))
      }
      return this.send(again.request, dispatcher).then((r) => this.answered(r), (e) => this.failed(e))
    }, (defect) => this.defect(defect))
  }

  private call(credentials: AppliedCredentials): Promise<CallOutcome> {
    if (this.aborted) return Promise.resolve(this.done(CALLER_GONE))
    const prepared = this.prepare(credentials)
    if (!prepared.ok) return Promise.resolve(this.done(notPrepared(prepared)))
    const { request } = prepared
    const dispatcher = this.self ? this.setup.ownApi.dispatcherFor(request.url) : this.setup.dispatcher
    if (dispatcher === undefined) return this.defect(new Error(`own API call left its origin: ${request.url}`))
    this.base = invocationOf(this.principal, this.target, this.context.taskId ?? null, prepared.requestBytes)
    const refreshes = !this.self && this.target.connection.auth_type === "oauth2"
    return this.send(request, dispatcher).then(
      (response) =>
        refreshes && response.statusCode === 401 && !this.aborted
          ? this.refreshed(response, dispatcher)
          : this.answered(response),
      (error) => this.failed(error)
    )
  }
}

const NO_CONTEXT: InvokeContext = {}

/** Builds the call function from this node's parts; OperationInvoker does it once. */
export const makeOperationCall = (setup: OperationCallSetup) =>
(
  principal: Principal,
  target: InvokeTarget,
  input: InvokeOperation,
  context: InvokeContext = NO_CONTEXT
): OperationCall => new CallInFlight(setup, principal, target, input, context)

export type CallOperation = ReturnType<typeof makeOperationCall>

/** What the one invoke core (OperationCall.ts) tells about each call; absent while metrics and traces are off. */
export interface CallObserver {
  /** Whether spans are exported: the general stack then hands the caller's span down. */
  readonly traces: boolean
  /** A span for the call, under `parent` (the caller's span, if any), while spans are exported. */
  readonly begin: (target: InvokeTarget, parent: Tracer.AnySpan | undefined) => Tracer.Span | undefined
  /** Adds `traceparent` to the upstream request (SWITCHYARD_TRACE_PROPAGATE_UPSTREAM). */
  readonly outgoing: (span: Tracer.Span, headers: Record<string, string>) => void
  readonly end: (span: Tracer.Span, outcome: CallOutcome | undefined) => void
  /** Metrics: one call that reached the target or failed to, with its status (null: no answer). */
  readonly record: ((target: InvokeTarget, status: number | null, ms: number) => void) | undefined
}
