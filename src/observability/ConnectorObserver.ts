import { Context, Effect, Exit, Option, Tracer } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { CallObserver } from "../connectors/OperationCall.js"
import { NodeMetrics } from "./NodeMetrics.js"
import { leanSpansWhenTracing } from "./Tracing.js"

const OK = Exit.void

/** The caller's current span, for a call the general stack makes (OperationInvoker.invoke). */
export const currentParentSpan = Effect.withFiberRuntime<Tracer.AnySpan | undefined>((fiber) =>
  Effect.succeed(Option.getOrUndefined(Context.getOption(fiber.currentContext, Tracer.ParentSpan)))
)

export const makeCallObserver = Effect.gen(function*() {
  const metrics = yield* NodeMetrics
  const config = yield* SwitchyardConfig
  const spans = yield* leanSpansWhenTracing
  const record = metrics.connectorCall
  if (record === undefined && spans === undefined) return undefined
  const propagate = config.tracing.propagateUpstream
  const observer: CallObserver = {
    traces: spans !== undefined,
    begin: (target, parent) => {
      if (spans === undefined) return undefined
      const span = spans.make(`connector ${target.operation.operationId}`, parent, "client")
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
      spans?.end(span, OK)
    },
    record: record === undefined ? undefined : (target, status, ms) => record(target.connector, status, ms)
  }
  return observer
})
