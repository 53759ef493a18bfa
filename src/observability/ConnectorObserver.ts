import { Context, Effect, Exit, Option, Tracer } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { CallOutcome } from "../connectors/OperationCall.js"
import type { InvokeTarget } from "../connectors/PreparedCall.js"
import { NodeMetrics } from "./NodeMetrics.js"
import { tracesUrl } from "./Tracing.js"

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

const OK = Exit.void

/** The caller's current span, for a call the general stack makes (OperationInvoker.invoke). */
export const currentParentSpan = Effect.withFiberRuntime<Tracer.AnySpan | undefined>((fiber) =>
  Effect.succeed(Option.getOrUndefined(Context.getOption(fiber.currentContext, Tracer.ParentSpan)))
)

export const makeCallObserver = Effect.gen(function*() {
  const metrics = yield* NodeMetrics
  const config = yield* SwitchyardConfig
  const tracer = tracesUrl(config) === undefined ? undefined : yield* Effect.tracer
  const record = metrics.connectorCall
  if (record === undefined && tracer === undefined) return undefined
  const propagate = config.tracing.propagateUpstream
  const observer: CallObserver = {
    traces: tracer !== undefined,
    begin: (target, parent) => {
      if (tracer === undefined) return undefined
      const span = tracer.span(
        `connector ${target.operation.operationId}`,
        parent === undefined ? Option.none() : Option.some(parent),
        Context.empty(),
        [],
        process.hrtime.bigint(),
        "client"
      )
      span.attribute("switchyard.connector.id", target.connector.id)
      span.attribute("switchyard.connector.name", target.connector.name)
      span.attribute("switchyard.connection.id", target.connection.id)
      span.attribute("switchyard.operation.id", target.operation.id)
      span.attribute("http.request.method", target.operation.method.toUpperCase())
      return span
    },
    outgoing: (span, headers) => {
      if (propagate) headers.traceparent = `00-${span.traceId}-${span.spanId}-01`
    },
    end: (span, outcome) => {
      if (outcome === undefined) span.attribute("error.type", "defect")
      else if (outcome._tag === "Answered") span.attribute("http.response.status_code", outcome.status)
      else span.attribute("error.type", outcome.code)
      span.end(process.hrtime.bigint(), OK)
    },
    record: record === undefined ? undefined : (target, status, ms) => record(target.connector, status, ms)
  }
  return observer
})
