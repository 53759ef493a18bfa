import { Cause, type Clock, Context, Effect, Exit, type Fiber, Option, Tracer } from "effect"
import * as Crypto from "node:crypto"
import type { FinishedSpan, SpanEvent } from "./SpanEncoding.js"

/** Random hex ids from a pooled buffer: one call into the CSPRNG per 4 KiB of ids, not one per span. */
const pool = Buffer.alloc(4096)
let pooled = pool.length
export const randomHex = (bytes: number) => {
  if (pooled + bytes > pool.length) {
    Crypto.randomFillSync(pool)
    pooled = 0
  }
  pooled += bytes
  return pool.toString("hex", pooled - bytes, pooled)
}

const NO_LINKS: ReadonlyArray<Tracer.SpanLink> = Object.freeze([])

/**
 * A sampled span of this node: its attributes in a Map, its times as the bigints Effect gives, and, once ended,
 * handed as it is to the exporter's queue (`sink`), which encodes it with the rest of its batch
 * (SpanEncoding.ts). On failure the status and the `exception` event are worked out when it ends, as
 * @effect/opentelemetry does; a success drops its value (the span would otherwise hold, say, a query's rows
 * until the next export).
 */
export class ExportedSpan implements Tracer.Span, FinishedSpan {
  readonly _tag = "Span"
  readonly sampled = true
  readonly spanId = randomHex(8)
  readonly parentSpanId: string | undefined
  readonly attributes = new Map<string, unknown>()
  links: ReadonlyArray<Tracer.SpanLink>
  events: Array<SpanEvent> | undefined = undefined
  status: Tracer.SpanStatus
  statusCode: 1 | 2 = 1
  statusMessage: string | undefined = undefined
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    readonly startTime: bigint,
    readonly kind: Tracer.SpanKind,
    readonly traceId: string,
    private readonly sink: (span: ExportedSpan) => void
  ) {
    this.parentSpanId = Option.isSome(parent) ? parent.value.spanId : undefined
    // most spans have none: a shared empty list, replaced on the first addLinks
    this.links = links.length === 0 ? NO_LINKS : Array.from(links)
    this.status = { _tag: "Started", startTime }
  }
  get endTime(): bigint {
    return this.status._tag === "Ended" ? this.status.endTime : this.startTime
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    if (this.status._tag === "Ended") return
    if (exit._tag === "Failure") this.failed(exit.cause, endTime)
    this.status = {
      _tag: "Ended",
      startTime: this.startTime,
      endTime,
      exit: exit._tag === "Success" ? Exit.void : exit
    }
    this.sink(this)
  }
  attribute(key: string, value: unknown) {
    this.attributes.set(key, value)
  }
  event(name: string, startTime: bigint, attributes?: Record<string, unknown>) {
    ;(this.events ??= []).push([name, startTime, attributes])
  }
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    this.links = [...this.links, ...links]
  }
  private failed(cause: Cause.Cause<unknown>, endTime: bigint) {
    if (Cause.isInterruptedOnly(cause)) {
      // interrupted is not an error (a request that lost a race, a fiber stopped at shutdown)
      this.statusMessage = Cause.pretty(cause)
      return
    }
    this.statusCode = 2
    const first = Cause.prettyErrors(cause)[0]
    if (first === undefined) return
    this.statusMessage = first.message
    this.event("exception", endTime, {
      "exception.type": first.name,
      "exception.message": first.message,
      "exception.stacktrace": Cause.pretty(cause, { renderErrorCause: true })
    })
  }
}

/** A span not sampled: kept in memory for its children's decisions and ids, never exported. */
export class UnsampledSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = false
  readonly spanId = randomHex(8)
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink>
  status: Tracer.SpanStatus
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    readonly traceId: string
  ) {
    this.links = Array.from(links)
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(key: string, value: unknown) {
    this.attributes.set(key, value)
  }
  event() {}
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    this.links.push(...links)
  }
}

/**
 * Spans for the hot paths of a task (its run, its model calls), made by the node's tracer directly. What
 * `Effect.withSpan` adds, these spans never use, and with ~55 services in a request's context it cost a task
 * more than the spans themselves: a copy of the fiber's references (for span annotations and links from the
 * environment, which nothing here sets), and for every span, entering the context: a copy of every service,
 * then a full equality scan of the context each time a same-sized one is set or restored.
 */
export interface LeanSpans {
  /** A span under the fiber's current span, started now; a leaf: nothing finds it in the context. */
  readonly start: (
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    name: string,
    kind: Tracer.SpanKind,
    attributes: Record<string, unknown>
  ) => Tracer.Span
  readonly end: (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) => void
  /** `effect` in a new span that is the parent of the spans it makes (one copy of the context). */
  readonly around: (
    name: string,
    attributes: Record<string, unknown>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export const leanSpans = (tracer: Tracer.Tracer, clock: Clock.Clock): LeanSpans => {
  const start: LeanSpans["start"] = (fiber, name, kind, attributes) => {
    const parent = Context.getOption(fiber.currentContext, Tracer.ParentSpan)
    const span = tracer.span(name, parent, Context.empty(), NO_LINKS, clock.unsafeCurrentTimeNanos(), kind)
    for (const key in attributes) span.attribute(key, attributes[key])
    return span
  }
  const end: LeanSpans["end"] = (span, exit) => span.end(clock.unsafeCurrentTimeNanos(), exit)
  return {
    start,
    end,
    around: (name, attributes) => (effect) =>
      Effect.withFiberRuntime((fiber) => {
        const span = start(fiber, name, "internal", attributes)
        return Effect.onExit(
          Effect.provideService(effect, Tracer.ParentSpan, span),
          (exit) => Effect.sync(() => end(span, exit))
        )
      })
  }
}
