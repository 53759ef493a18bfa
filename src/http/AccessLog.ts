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
export const accessLineJson = (line: AccessLine, at: number) =>
  `{"message":"http","logLevel":"INFO","timestamp":"${isoTime(at)}","annotations":${annotationsJson(line)},"spans":{}}`

/** `new Date(at).toISOString()`, its second's part made once a second (toISOString costs ~1 µs). */
let second = Number.NaN
let secondText = ""
const isoTime = (at: number) => {
  const s = Math.floor(at / 1000)
  if (s !== second) {
    second = s
    secondText = new Date(s * 1000).toISOString().slice(0, 20)
  }
  const ms = at - s * 1000
  return secondText + (ms < 10 ? "00" : ms < 100 ? "0" : "") + ms + "Z"
}

// printable ASCII but `"` and `\`: written as it is in JSON
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/
const jsonString = (s: string) => PLAIN.test(s) ? `"${s}"` : JSON.stringify(s)

/** JSON.stringify(line), the same text, without its generic walk over the object (~2 µs a line). */
const annotationsJson = (line: AccessLine) => {
  let out = line.method === undefined ? "{" : `{"method":${jsonString(line.method)},`
  out += `"path":${jsonString(line.path)},"status":${JSON.stringify(line.status)},"latency_ms":${
    JSON.stringify(line.latency_ms)
  },"request_id":${jsonString(line.request_id)}`
  if (line.organization_id !== undefined) out += `,"organization_id":${jsonString(line.organization_id)}`
  if (line.fast_path !== undefined) out += `,"fast_path":true`
  if (line.trace_id !== undefined) out += `,"trace_id":${jsonString(line.trace_id)}`
  if (line.span_id !== undefined) out += `,"span_id":${jsonString(line.span_id)}`
  return out + "}"
}

/**
 * Lines written directly wait for the end of the event loop's turn and go out together: one write (a system
 * call, synchronous for files and pipes) per turn, not per request. They are also formatted then, in one loop:
 * formatted one by one as each request was answered, a line cost a connector invoke ~11 µs of node CPU (of
 * ~105), against ~4 µs now. What a crash loses is that turn's lines.
 */
interface Waiting {
  readonly fields: AccessFields
  readonly latencyMs: number
  /** Date.now() when answered. */
  readonly at: number
  readonly traced: boolean
}
let waiting: Array<Waiting> = []
const flushLines = () => {
  const lines = waiting
  waiting = []
  let out = ""
  for (let i = 0; i < lines.length; i++) {
    const { at, fields, latencyMs, traced } = lines[i]!
    out += accessLineJson(lineOf(fields, latencyMs, traced), at) + "\n"
  }
  if (out !== "") process.stderr.write(out)
}
const writeLine = (line: Waiting) => {
  if (waiting.length === 0) setImmediate(flushLines)
  waiting.push(line)
}
process.once("exit", flushLines)

const lineOf = (fields: AccessFields, latencyMs: number, traced: boolean): AccessLine => ({
  method: fields.method,
  path: pathOf(fields.url),
  status: fields.status,
  latency_ms: latencyMs,
  request_id: fields.request_id,
  ...(fields.organization_id === undefined ? {} : { organization_id: fields.organization_id }),
  ...(fields.fast_path === undefined ? {} : { fast_path: fields.fast_path }),
  ...(traced && fields.span !== undefined ? { trace_id: fields.span.traceId, span_id: fields.span.spanId } : {})
})

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
    const latencyMs = Math.round((performance.now() - fields.started) * 100) / 100
    if (lean) return writeLine({ fields, latencyMs, at: Date.now(), traced })
    const line = lineOf(fields, latencyMs, traced)
    runSync(Effect.logInfo("http").pipe(Effect.annotateLogs(line as unknown as Record<string, unknown>)))
  }
})

type AccessFields = Omit<AccessLine, "path" | "latency_ms" | "trace_id" | "span_id"> & {
  readonly url: string
  readonly started: number
  /** The request's span (the general stack's server span, a fast path's own or its caller's), if any. */
  readonly span?: Tracer.AnySpan | undefined
}

export type AccessLog = NonNullable<Effect.Effect.Success<typeof makeAccessLog>>
