import type { Tracer } from "effect"

/*
 * What the tracer (Spans.ts) hands the encoder (SpanEncoding.ts), in a module of types only so that the two do not
 * import each other.
 */

/** An ended span's event: its name, time and attributes. */
export type SpanEvent = readonly [name: string, time: bigint, attributes: Record<string, unknown> | undefined]

/**
 * Attributes that many spans share (a connector call's connector, connection and operation): their keys and values
 * alternating, and the same as protobuf KeyValue fields of a Span, encoded once (SpanEncoding.encodeConstantAttributes).
 */
export interface ConstantAttributes {
  readonly list: ReadonlyArray<unknown>
  readonly protobuf: Uint8Array
}

/** What an export reads of an ended span. */
export interface FinishedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: Tracer.SpanKind
  readonly startTime: bigint
  readonly endTime: bigint
  readonly attributes: ReadonlyMap<string, unknown>
  readonly events: ReadonlyArray<SpanEvent> | undefined
  readonly links: ReadonlyArray<Tracer.SpanLink>
  /** OTLP status code: 1 ok, 2 error. */
  readonly statusCode: 1 | 2
  readonly statusMessage: string | undefined
}
