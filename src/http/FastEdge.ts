import { Headers, HttpTraceContext } from "@effect/platform"
import {
  Cause,
  Context,
  Effect,
  Exit,
  Fiber,
  FiberId,
  FiberRef,
  FiberRefs,
  HashMap,
  Option,
  Runtime,
  Tracer
} from "effect"
import type * as Http from "node:http"
import type { Writable } from "node:stream"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { LeanSpans } from "../observability/Spans.js"
import { leanSpansWhenTracing, tracesUrl } from "../observability/Tracing.js"
import { makeAccessLog, pathOf } from "./AccessLog.js"
import { Drain } from "./Drain.js"
import { errorEnvelope, type ErrorFields, OWN_ERROR_HEADER } from "./ErrorEnvelope.js"
import { statusOfError } from "./ErrorStatus.js"
import { isJsonMediaType, requestProblem, urlProblem } from "./JsonBody.js"
import { answerHeaders, requestIdOf, unexpectedFailure } from "./RequestPipeline.js"

type OutHeaders = Record<string, string | number | Array<string>>

/**
 * The edge of the plain-Node fast paths (FastInvoke, FastTasks, McpFastPath), written once and shared with the
 * request pipeline where the pipeline has the same step: which requests a fast path may take, and one
 * `Exchange` per taken request that answers as the pipeline does — the request id, `Connection: close` while
 * draining, the error envelope with its marker, unexpected failures (`unexpectedFailure`), the access log.
 */
export class FastEdge extends Effect.Service<FastEdge>()("http/FastEdge", {
  effect: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const drain = yield* Drain
    const accessLog = yield* makeAccessLog
    const node = yield* Effect.runtime<never>()
    const runPromise = Runtime.runPromise(node)
    const annotations = FiberRefs.getOrDefault(node.fiberRefs, FiberRef.currentLogAnnotations)

    /**
     * The runtime a request's effect runs on: the node's fiber references (logger, log level, tracer), the
     * request id among its log annotations, and a context holding only the request's span, if any. A fast
     * path's effects need no service from the context (their requirement is never), and the node's holds ~60
     * services, which every change of a fiber's context copies and compares: Effect.withParentSpan and
     * Effect.annotateLogs around the effect cost a traced task a copy of the context and four copies of the
     * fiber's references, more than its spans.
     */
    const runtimeFor = (requestId: string, span?: Tracer.AnySpan): Runtime.Runtime<never> =>
      Runtime.make({
        context: span === undefined ? Context.empty() : Context.make(Tracer.ParentSpan, span),
        fiberRefs: FiberRefs.updateAs(node.fiberRefs, {
          fiberId: FiberId.none,
          fiberRef: FiberRef.currentLogAnnotations,
          value: HashMap.set(annotations, "request_id", requestId)
        }),
        runtimeFlags: node.runtimeFlags
      })

    /**
     * Whether a fast path may take a request, by its framing: not while draining; a body of declared length
     * within SWITCHYARD_MAX_BODY_BYTES (a non-empty one with `bodyRequired`); the API's body rule holds
     * (JsonBody.requestProblem), or with `jsonAlways` a JSON content type even without a body (MCP). Anything
     * else is the general stack's to answer, or refuse, with its own messages.
     */
    const takes = (
      req: Http.IncomingMessage,
      options: { readonly bodyRequired?: boolean; readonly jsonAlways?: boolean } = {}
    ) => {
      if (drain.isDraining() || req.headers["transfer-encoding"] !== undefined) return false
      const length = Number(req.headers["content-length"] ?? "0")
      if (!(length <= config.maxBodyBytes && (options.bodyRequired ? length > 0 : length >= 0))) return false
      return options.jsonAlways
        ? urlProblem(req.url ?? "") === undefined && isJsonMediaType(req.headers["content-type"])
        : requestProblem(req.url ?? "", req.headers) === undefined
    }

    /**
     * The caller's span (W3C `traceparent`, or B3), read as the general stack's request span reads it, while
     * spans are exported: a fast path's own spans go under it, so a traced caller's trace goes on through the
     * fast path too. Undefined with tracing off or no trace header (the header lookups are all it costs then).
     */
    const tracing = tracesUrl(config) !== undefined
    const callerSpan = (req: Http.IncomingMessage): Tracer.ExternalSpan | undefined => {
      if (!tracing) return undefined
      const h = req.headers
      if (h.traceparent === undefined && h.b3 === undefined && h["x-b3-traceid"] === undefined) return undefined
      return Option.getOrUndefined(HttpTraceContext.fromHeaders(Headers.fromInput(h)))
    }
    const spans = yield* leanSpansWhenTracing
    const clock = yield* Effect.clock

    /**
     * One request a fast path took: held open against a drain until its response closes. A class, not
     * closures: nothing is allocated per request beyond the instance.
     */
    class Exchange {
      readonly started = performance.now()
      readonly requestId: string
      constructor(
        readonly req: Http.IncomingMessage,
        readonly res: Http.ServerResponse,
        readonly organizationId: string
      ) {
        this.requestId = requestIdOf(req.headers["x-request-id"] as string | undefined)
        drain.arrive()
        // `on`, not `once` (a response closes once): no wrapper per request; one listener for the drain and the span
        res.on("close", this.closed)
      }

      private parent: Tracer.AnySpan | undefined | null = null
      private own: Tracer.Span | undefined
      private readonly closed = () => {
        drain.leave()
        if (this.own !== undefined) spans!.end(this.own, Exit.void)
      }

      /**
       * While spans are exported, the span the request's spans go under, read or made once per request: the
       * caller's (`callerSpan`), else a server span of its own, as the general stack makes one, ended with the
       * response. Without it, a request the caller sent no trace with would leave spans with no common root
       * (each a trace of its own) and an access line naming no trace. Under a caller's span it makes none.
       */
      parentSpan(): Tracer.AnySpan | undefined {
        if (this.parent === null) {
          this.parent = callerSpan(this.req)
          if (this.parent === undefined && spans !== undefined) this.parent = this.own = this.serverSpan(spans)
        }
        return this.parent
      }

      private serverSpan(spans: LeanSpans) {
        const startTime = clock.unsafeCurrentTimeNanos() - BigInt(Math.round((performance.now() - this.started) * 1e6))
        const span = spans.make(`http.server ${this.req.method}`, undefined, "server", startTime)
        span.attribute("http.request.method", this.req.method)
        span.attribute("url.path", pathOf(this.req.url ?? ""))
        // ended with the response (`closed`), or now if it is already over
        if (this.res.closed) spans.end(span, Exit.void)
        return span
      }

      /** The runtime of this request's effects (`runtimeFor`): under its span (`parentSpan`) while spans are exported. */
      runtime(): Runtime.Runtime<never> {
        return runtimeFor(this.requestId, this.parentSpan())
      }

      /**
       * Runs an effect for this request: interrupted when the client goes away, as the general stack interrupts
       * its handler (else an abandoned wait ran on, past the node's stop); a failure answered as the pipeline does.
       */
      run<A>(effect: Effect.Effect<A, unknown>, onSuccess: (a: A) => void) {
        const fiber = Runtime.runFork(this.runtime())(effect)
        const gone = () => Effect.runFork(Fiber.interrupt(fiber))
        this.res.once("close", gone)
        fiber.addObserver((exit) => {
          this.res.off("close", gone)
          if (Exit.isSuccess(exit)) onSuccess(exit.value)
          else this.fail(exit.cause)
        })
      }

      /** The whole body as text; a broken upload ends the response. */
      readBody(onText: (text: string) => void) {
        const chunks: Array<Buffer> = []
        this.req.on("data", (c: Buffer) => chunks.push(c))
        this.req.on("error", () => this.res.destroy())
        this.req.on(
          "end",
          () => onText(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"))
        )
      }

      private head(status: number, headers: OutHeaders) {
        Object.assign(headers, answerHeaders(this.requestId, drain.isDraining()))
        this.res.writeHead(status, headers)
        const span = tracing ? this.parentSpan() : undefined
        this.own?.attribute("http.response.status_code", status)
        if (accessLog !== undefined) {
          accessLog({
            method: this.req.method,
            url: this.req.url ?? "",
            status,
            started: this.started,
            request_id: this.requestId,
            organization_id: this.organizationId,
            fast_path: true,
            span
          })
        }
      }

      json(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}) {
        this.jsonText(status, JSON.stringify(body), headers)
      }

      /** A body already serialized. */
      jsonText(status: number, text: string, headers: Readonly<Record<string, string>> = {}) {
        if (this.res.destroyed) return
        // a declared length: no chunked framing to write, and the client reads one piece
        this.head(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
        this.res.end(text)
      }

      /** One of our errors: the envelope, with the request id, and the marker header. */
      error(status: number, error: ErrorFields, headers: Readonly<Record<string, string>> = {}) {
        this.json(status, errorEnvelope(error, this.requestId), { ...headers, ...OWN_ERROR_HEADER })
      }

      empty(status: number) {
        if (this.res.destroyed) return
        this.head(status, {})
        this.res.end()
      }

      /** Headers now, then the body as it comes (a target's answer; without one, the caller writes it). */
      stream(status: number, headers: OutHeaders, body?: { readonly pipe: (to: Writable) => void }) {
        if (this.res.destroyed) return
        this.head(status, headers)
        body?.pipe(this.res)
      }

      /**
       * A failure, as the general stack answers it: one of our error classes by its status; anything else as
       * the request pipeline answers it (503 or 500, logged with the request id).
       */
      fail(cause: Cause.Cause<unknown>) {
        if (this.res.headersSent) return void this.res.destroy()
        failed(cause, this.requestId, (status, error, headers) => this.error(status, error, headers))
      }
    }

    /** A failure as the error the general stack answers for it (`answer` may be called a moment later). */
    const failed = (
      cause: Cause.Cause<unknown>,
      requestId: string,
      answer: (status: number, error: ErrorFields, headers?: Readonly<Record<string, string>>) => void
    ) => {
      const failure = Option.getOrUndefined(Cause.failureOption(cause)) as
        | (ErrorFields & { readonly _tag?: unknown })
        | undefined
      const status = typeof failure?._tag === "string" ? statusOfError.get(failure._tag) : undefined
      if (status !== undefined) return answer(status, failure!)
      void runPromise(unexpectedFailure(cause, requestId)).then((a) => answer(a.status, a.error, a.headers))
    }

    return {
      takes,
      failed,
      runtimeFor,
      begin: (req: Http.IncomingMessage, res: Http.ServerResponse, organizationId: string) =>
        new Exchange(req, res, organizationId)
    } as const
  })
}) {}

export type Exchange = ReturnType<FastEdge["begin"]>
