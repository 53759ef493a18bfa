import { Context, Effect, Exit, Option, Tracer } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import type { ConnectionRow } from "../connectors/ConnectorRepo.js"
import type { ImportedOperation } from "../connectors/openapi/ImportedConnector.js"
import type { CallObserver } from "../connectors/OperationCall.js"
import type { InvokeTarget } from "../connectors/PreparedCall.js"
import { NodeMetrics } from "./NodeMetrics.js"
import { encodeConstantAttributes } from "./SpanEncoding.js"
import { ExportedSpan, setAttributes } from "./Spans.js"
import type { ConstantAttributes } from "./SpanTypes.js"
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
  // a call's attributes that its target fixes, encoded once per connection and operation (a connection row an
  // update replaces is a new key; a renamed connector's are encoded again): each call's span copies their bytes
  const constants = new WeakMap<ConnectionRow, WeakMap<ImportedOperation, ConstantAttributes>>()
  const constantsOf = (target: InvokeTarget): ConstantAttributes => {
    let byOperation = constants.get(target.connection)
    if (byOperation === undefined) constants.set(target.connection, byOperation = new WeakMap())
    let found = byOperation.get(target.operation)
    if (found === undefined || found.list[3] !== target.connector.name) {
      found = encodeConstantAttributes([
        "switchyard.connector.id",
        target.connector.id,
        "switchyard.connector.name",
        target.connector.name,
        "switchyard.connection.id",
        target.connection.id,
        "switchyard.operation.id",
        target.operation.id,
        "http.request.method",
        target.operation.method.toUpperCase()
      ])
      byOperation.set(target.operation, found)
    }
    return found
  }
  const observer: CallObserver = {
    traces: spans !== undefined,
    begin: (target, parent) => {
      if (spans === undefined) return undefined
      const span = spans.make(`connector ${target.operation.operationId}`, parent, "client")
      if (span instanceof ExportedSpan) span.constantAttributes(constantsOf(target))
      else if (span.sampled) setAttributes(span, constantsOf(target).list)
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
