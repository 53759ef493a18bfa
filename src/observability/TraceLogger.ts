import { Context, FiberRef, FiberRefs, HashMap, Logger, Tracer } from "effect"

/**
 * The node's JSON logger (AccessLog.nodeLogger) with the current span's `trace_id` and `span_id` as annotations,
 * so a log line leads to its trace. Installed in its place only while traces are exported (Tracing.ts): with
 * tracing off, span ids lead nowhere.
 */
export const tracedNodeLogger = Logger.withConsoleError(
  Logger.mapInputOptions(Logger.jsonLogger, (options) => {
    const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
    if (span._tag === "None") return options
    return {
      ...options,
      annotations: HashMap.set(
        HashMap.set(options.annotations, "trace_id", span.value.traceId as unknown),
        "span_id",
        span.value.spanId
      )
    }
  })
)
