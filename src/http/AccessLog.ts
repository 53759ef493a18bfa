import { Effect, FiberRef, HashSet, Logger, LogLevel, Runtime, type Tracer } from "effect"
import { NodeMetrics } from "../observability/NodeMetrics.js"
import { tracedNodeLogger } from "../observability/TraceLogger.js"

/** One access-log line's fields: what every transport logs for a request it answered. */
export interface AccessLine {
  readonly method: string | undefined
  /** Without the query string, which may carry what should not be logged. */
  readonly path: string
  readonly status: number
  readonly latency_ms: number
  readonly request_id: string
  readonly organization_id?: string | undefined
  /** Which stack answered (the plain-Node fast paths set it), for an operator comparing the two. */
  readonly fast_path?: true
  /** The request's span, while traces are exported (TraceLogger.ts): the line leads to its trace. */
  readonly trace_id?: string
  readonly span_id?: string
}

/** The node's logger (`switchyard serve`): one JSON object per line on stderr (src/cli.ts installs it). */
export const nodeLogger = Logger.withConsoleError(Logger.jsonLogger)

/**
 * The same line `nodeLogger` writes for `Effect.logInfo("http")` with the line's fields as annotations, written
 * directly: building a log entry through the fiber runtime (annotations as a HashMap, the logger pipeline, a
 * circular-safe stringify) cost about a third of a proxied connector call. No `fiberId`: no fiber wrote it.
 */
export const accessLineJson = (line: AccessLine, date: Date) =>
  `{"message":"http","logLevel":"INFO","timestamp":"${date.toISOString()}","annotations":${
    JSON.stringify(line)
  },"spans":{}}`

/**
 * Lines written directly wait for the end of the event loop's turn and go out together: one write (a system
 * call, synchronous for files and pipes) per turn, not per request. What a crash loses is that turn's lines.
 */
let waiting = ""
const flushLines = () => {
  const out = waiting
  waiting = ""
  if (out !== "") process.stderr.write(out)
}
const writeLine = (line: string) => {
  if (waiting === "") setImmediate(flushLines)
  waiting += line + "\n"
}
process.once("exit", flushLines)

export const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/**
 * The access log of every transport (the request pipeline and the plain-Node fast paths): a function that logs
 * one line at Info, or nothing at all when the node logs above Info. With the node's own JSON logger (and no
 * other) the line is written directly; with any other (tests, an embedding program) through Effect's logger.
 */
export const makeAccessLog = Effect.gen(function*() {
  // every answered request is counted here, once, for both stacks (metrics on: SWITCHYARD_METRICS_PORT)
  const observe = (yield* NodeMetrics).request
  const enabled = LogLevel.lessThanEqual(yield* FiberRef.get(FiberRef.currentMinimumLogLevel), LogLevel.Info)
  if (!enabled) {
    return observe === undefined
      ? undefined
      : (fields: AccessFields): void => observe(fields.method, fields.url, fields.status, fields.started)
  }
  const loggers = yield* FiberRef.get(FiberRef.currentLoggers)
  // written outside the request's span: its ids come with the fields, as the traced logger would add them
  const traced = HashSet.has(loggers, tracedNodeLogger)
  // the tracer's logger only adds events to a current span, and access lines are written outside any
  const lean = (HashSet.has(loggers, nodeLogger) || traced) &&
    HashSet.size(HashSet.remove(loggers, Logger.tracerLogger)) === 1
  const runSync = Runtime.runSync(yield* Effect.runtime<never>())
  return (
    fields: AccessFields
  ): void => {
    observe?.(fields.method, fields.url, fields.status, fields.started)
    const line: AccessLine = {
      method: fields.method,
      path: pathOf(fields.url),
      status: fields.status,
      latency_ms: Math.round((performance.now() - fields.started) * 100) / 100,
      request_id: fields.request_id,
      ...(fields.organization_id === undefined ? {} : { organization_id: fields.organization_id }),
      ...(fields.fast_path === undefined ? {} : { fast_path: fields.fast_path }),
      ...(traced && fields.span !== undefined ? { trace_id: fields.span.traceId, span_id: fields.span.spanId } : {})
    }
    if (lean) writeLine(accessLineJson(line, new Date()))
    else runSync(Effect.logInfo("http").pipe(Effect.annotateLogs(line as unknown as Record<string, unknown>)))
  }
})

type AccessFields = Omit<AccessLine, "path" | "latency_ms" | "trace_id" | "span_id"> & {
  readonly url: string
  readonly started: number
  /** The request's span (the general stack's server span, a fast path's own or its caller's), if any. */
  readonly span?: Tracer.AnySpan | undefined
}

export type AccessLog = NonNullable<Effect.Effect.Success<typeof makeAccessLog>>
