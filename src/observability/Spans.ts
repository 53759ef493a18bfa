import { Cause, type Clock, Context, Effect, Exit, type Fiber, Option, Tracer } from "effect"
import * as Crypto from "node:crypto"
import type { ConstantAttributes, FinishedSpan, SpanEvent } from "./SpanTypes.js"

/** Random 32-bit words from a pooled buffer: one call into the CSPRNG per 16 KiB of ids, not one per span. */
const pool = new Uint32Array(4096)
let pooled = pool.length
const randomWord = () => {
  if (pooled === pool.length) {
    Crypto.randomFillSync(pool)
    pooled = 0
  }
  return pool[pooled++]!
}

const hex8 = (w: number) => w.toString(16).padStart(8, "0")
const HEX32 = /^[0-9a-fA-F]{32}$/

/**
 * A trace's id as four big-endian 32-bit words, shared by the spans of the trace in this node: the export writes
 * its bytes from the words, and the hex form is made only when something asks for it (a log line, a
 * `traceparent`). A remote trace id that is not 32 hex digits is kept as it came (`exact` false).
 */
export class TraceId {
  private text: string | undefined
  constructor(
    readonly w0: number,
    readonly w1: number,
    readonly w2: number,
    readonly w3: number,
    text?: string,
    readonly exact = true
  ) {
    this.text = text
  }
  static random() {
    return new TraceId(randomWord(), randomWord(), randomWord(), randomWord())
  }
  /** A remote span's trace id (a `traceparent`, a cluster message). */
  static of(hex: string) {
    return HEX32.test(hex)
      ? new TraceId(
        parseInt(hex.slice(0, 8), 16),
        parseInt(hex.slice(8, 16), 16),
        parseInt(hex.slice(16, 24), 16),
        parseInt(hex.slice(24), 16),
        hex
      )
      : new TraceId(0, 0, 0, 0, hex, false)
  }
  get hex(): string {
    return this.text ??= hex8(this.w0) + hex8(this.w1) + hex8(this.w2) + hex8(this.w3)
  }
}

const NO_LINKS: ReadonlyArray<Tracer.SpanLink> = Object.freeze([])

/**
 * What this node's spans, sampled or not, have in common: the span id as two random 32-bit words (its hex form
 * made once, when asked) and the trace's id, taken from the parent when it is one of these.
 */
abstract class LocalSpan {
  readonly _tag = "Span"
  readonly idHi = randomWord()
  readonly idLo = randomWord()
  private idText: string | undefined = undefined
  constructor(readonly trace: TraceId) {}
  get spanId(): string {
    return this.idText ??= hex8(this.idHi) + hex8(this.idLo)
  }
  get traceId(): string {
    return this.trace.hex
  }
}

/** The trace a new span joins: its parent's; undefined for a root (the tracer draws a new id). */
export const traceOf = (parent: Option.Option<Tracer.AnySpan>): TraceId | undefined =>
  Option.isNone(parent)
    ? undefined
    : parent.value instanceof LocalSpan
    ? parent.value.trace
    : TraceId.of(parent.value.traceId)

/** Whether a span is one of this node's: its ids are words, read without parsing hex (SpanEncoding.ts). */
export const isLocalSpan = (span: Tracer.AnySpan): span is Tracer.AnySpan & LocalSpan => span instanceof LocalSpan

/**
 * A sampled span of this node: its attributes in a list, its times as the bigints Effect gives, and, once ended,
 * handed as it is to the exporter's queue (`sink`), which encodes it with the rest of its batch
 * (SpanEncoding.ts). On failure the status and the `exception` event are worked out when it ends, as
 * @effect/opentelemetry does.
 */
export class ExportedSpan extends LocalSpan implements Tracer.Span, FinishedSpan {
  readonly sampled = true
  /**
   * Attribute keys and values, alternating, in the order first set (as a Map keeps them): a span has a handful,
   * and a Map per span (its table, grown as they come) cost more than writing them out. `attributes` is the
   * Map view the Span interface asks for; nothing on the hot paths reads it.
   */
  readonly attributeList: Array<unknown> = []
  /** Attributes shared with other spans, set before any other (`constantAttributes`), exported as encoded once. */
  constants: ConstantAttributes | undefined = undefined
  links: ReadonlyArray<Tracer.SpanLink>
  events: Array<SpanEvent> | undefined = undefined
  /** Set when it ends; a success keeps no value (the span would otherwise hold, say, a query's rows). */
  private endNs: bigint | undefined = undefined
  private exit: Exit.Exit<unknown, unknown> = Exit.void
  statusCode: 1 | 2 = 1
  statusMessage: string | undefined = undefined
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    readonly startTime: bigint,
    readonly kind: Tracer.SpanKind,
    trace: TraceId,
    private readonly sink: (span: ExportedSpan) => void
  ) {
    super(trace)
    // most spans have none: a shared empty list, replaced on the first addLinks
    this.links = links.length === 0 ? NO_LINKS : Array.from(links)
  }
  get parentSpanId(): string | undefined {
    return Option.isSome(this.parent) ? this.parent.value.spanId : undefined
  }
  get endTime(): bigint {
    return this.endNs ?? this.startTime
  }
  /** Made when asked (Effect asks once, ending a span of its own making): our spans are never asked. */
  get status(): Tracer.SpanStatus {
    return this.endNs === undefined
      ? { _tag: "Started", startTime: this.startTime }
      : { _tag: "Ended", startTime: this.startTime, endTime: this.endNs, exit: this.exit }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    if (this.endNs !== undefined) return
    if (exit._tag === "Failure") {
      this.failed(exit.cause, endTime)
      this.exit = exit
    }
    this.endNs = endTime
    this.sink(this)
  }
  get attributes(): ReadonlyMap<string, unknown> {
    const map = new Map<string, unknown>()
    for (const list of [this.constants?.list ?? [], this.attributeList]) {
      for (let i = 0; i < list.length; i += 2) map.set(list[i] as string, list[i + 1])
    }
    return map
  }
  /** Sets `constants` on a span that has no attributes yet (else, or twice, they are set one by one). */
  constantAttributes(constants: ConstantAttributes) {
    if (this.constants === undefined && this.attributeList.length === 0) this.constants = constants
    else setAttributes(this, constants.list)
  }
  attribute(key: string, value: unknown) {
    // a key of the constants set again: they become ordinary attributes (never on the paths that set them)
    if (this.constants !== undefined && this.constants.list.includes(key)) {
      this.attributeList.unshift(...this.constants.list)
      this.constants = undefined
    }
    const list = this.attributeList
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === key) {
        list[i + 1] = value
        return
      }
    }
    list.push(key, value)
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

/** Sets attributes given as keys and values alternating. */
export const setAttributes = (span: Tracer.Span, list: ReadonlyArray<unknown>) => {
  for (let i = 0; i < list.length; i += 2) span.attribute(list[i] as string, list[i + 1])
}

const NO_ATTRIBUTES: ReadonlyMap<string, unknown> = new Map()

/**
 * A span not sampled: kept in memory for its children's decisions and ids, never exported, so nothing that only
 * describes it (attributes, events, links) is kept.
 */
export class UnsampledSpan extends LocalSpan implements Tracer.Span {
  readonly sampled = false
  readonly attributes = NO_ATTRIBUTES
  readonly links = NO_LINKS
  status: Tracer.SpanStatus
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    trace: TraceId
  ) {
    super(trace)
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    this.status = {
      _tag: "Ended",
      startTime: this.status.startTime,
      endTime,
      exit: exit._tag === "Success" ? Exit.void : exit
    }
  }
  attribute() {}
  event() {}
  addLinks() {}
}

/**
 * Spans for the hot paths of a task (its run, its model calls), made by the node's tracer directly. What
 * `Effect.withSpan` adds, these spans never use, and with ~55 services in a request's context it cost a task
 * more than the spans themselves: a copy of the fiber's references (for span annotations and links from the
 * environment, which nothing here sets), and for every span, entering the context: a copy of every service,
 * then a full equality scan of the context each time a same-sized one is set or restored.
 */
export interface LeanSpans {
  /**
   * A span under `parent` (undefined: a root, a new trace), started at `startTime` (now by default): what the
   * plain-Node paths make (a fast path's server span, a connector call's client span), and the rest build on.
   */
  readonly make: (
    name: string,
    parent: Tracer.AnySpan | undefined,
    kind: Tracer.SpanKind,
    startTime?: bigint
  ) => Tracer.Span
  /** A span under the fiber's current span, started now; a leaf: nothing finds it in the context. */
  readonly start: (
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    name: string,
    kind: Tracer.SpanKind,
    attributes: Record<string, unknown>
  ) => Tracer.Span
  /** Ends `span` now. */
  readonly end: (span: Tracer.Span, exit: Exit.Exit<unknown, unknown>) => void
  /** `effect` in a new span that is the parent of the spans it makes (one copy of the context, the span first). */
  readonly around: (
    name: string,
    attributes: Record<string, unknown>
  ) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * `context` with `span` as its parent span, put first in the context's order. Setting a fiber's context,
 * Effect compares it with the one it replaces key by key, in the old one's order, until one differs; each
 * Effect.withSpan nested under this span sets a context that differs only in the parent span, so with that
 * key first the comparison ends at once instead of after ~55 services (twice a span: entering and restoring).
 */
const withParentFirst = <R>(context: Context.Context<R>, span: Tracer.Span): Context.Context<R> => {
  const key = Tracer.ParentSpan.key
  const services = new Map<string, unknown>([[key, span]])
  for (const [k, service] of context.unsafeMap) if (k !== key) services.set(k, service)
  return Context.unsafeMake(services)
}

export const leanSpans = (tracer: Tracer.Tracer, clock: Clock.Clock): LeanSpans => {
  const open = (name: string, parent: Option.Option<Tracer.AnySpan>, kind: Tracer.SpanKind, startTime?: bigint) =>
    tracer.span(name, parent, Context.empty(), NO_LINKS, startTime ?? clock.unsafeCurrentTimeNanos(), kind)
  const make: LeanSpans["make"] = (name, parent, kind, startTime) =>
    open(name, parent === undefined ? Option.none() : Option.some(parent), kind, startTime)
  const start: LeanSpans["start"] = (fiber, name, kind, attributes) => {
    const span = open(name, Context.getOption(fiber.currentContext, Tracer.ParentSpan), kind)
    for (const key in attributes) span.attribute(key, attributes[key])
    return span
  }
  const end: LeanSpans["end"] = (span, exit) => span.end(clock.unsafeCurrentTimeNanos(), exit)
  return {
    make,
    start,
    end,
    around: (name, attributes) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.withFiberRuntime<A, E, R>((fiber) => {
        const span = start(fiber, name, "internal", attributes)
        return Effect.onExit(
          Effect.mapInputContext(effect, (context: Context.Context<R>) => withParentFirst(context, span)),
          (exit) => Effect.sync(() => end(span, exit))
        )
      })
  }
}
