import { Inspectable, type Tracer } from "effect"
import { ProtoWriter, varintSize } from "./ProtoWriter.js"
import { ExportedSpan, isLocalSpan } from "./Spans.js"
import type { ConstantAttributes, FinishedSpan } from "./SpanTypes.js"

export type { FinishedSpan, SpanEvent } from "./SpanTypes.js"

/**
 * OTLP trace exports (opentelemetry.proto.trace.v1 TracesData) written straight from the ended spans, in
 * protobuf (the default) or in OTLP's JSON form (OTEL_EXPORTER_OTLP_PROTOCOL=http/json): no intermediate
 * `{key, value: {stringValue}}` objects per attribute and no decimal strings per timestamp. Field numbers follow
 * the .proto files; attribute values are mapped as @effect/opentelemetry maps them (an integer is an int, any other
 * number a double, a bigint an int, an array an array, anything else its string form).
 */

/** Who exports: the resource's attributes (service.name, …) and the instrumentation scope's name. */
export interface ExportResource {
  readonly attributes: ReadonlyArray<readonly [string, unknown]>
  readonly scopeName: string
}

export const SPAN_KIND: Record<Tracer.SpanKind, number> = {
  internal: 1,
  server: 2,
  client: 3,
  producer: 4,
  consumer: 5
}

// protobuf wire types
const VARINT = 0
const BIT64 = 1
const LEN = 2

const anyValue = (w: ProtoWriter, v: unknown): void => {
  switch (typeof v) {
    case "string":
      w.tag(1, LEN)
      w.string(v)
      return
    case "boolean":
      w.tag(2, VARINT)
      w.bool(v)
      return
    case "number":
      if (Number.isSafeInteger(v)) {
        w.tag(3, VARINT)
        w.int64(v)
      } else {
        w.tag(4, BIT64)
        w.double(v)
      }
      return
    case "bigint":
      w.tag(3, VARINT)
      w.int64(v)
      return
  }
  if (Array.isArray(v)) {
    w.tag(5, LEN)
    const array = w.begin()
    for (const item of v) {
      w.tag(1, LEN)
      const at = w.begin()
      anyValue(w, item)
      w.end(at)
    }
    w.end(array)
    return
  }
  w.tag(1, LEN)
  w.string(Inspectable.toStringUnknown(v))
}

const keyValue = (w: ProtoWriter, field: number, key: string, value: unknown) => {
  w.tag(field, LEN)
  const kv = w.begin()
  w.tag(1, LEN)
  w.string(key)
  w.tag(2, LEN)
  const at = w.begin()
  anyValue(w, value)
  w.end(at)
  w.end(kv)
}

const keyValues = (w: ProtoWriter, field: number, entries: Iterable<readonly [string, unknown]>) => {
  for (const [key, value] of entries) keyValue(w, field, key, value)
}

// a Map's forEach with the writer as `this`: no closure and no [key, value] array per attribute
function spanAttribute(this: ProtoWriter, value: unknown, key: string) {
  keyValue(this, 9, key, value)
}

/** `list` (keys and values alternating) as attributes that spans share, encoded once (ExportedSpan.constantAttributes). */
export const encodeConstantAttributes = (list: ReadonlyArray<unknown>): ConstantAttributes => {
  const w = new ProtoWriter(256)
  for (let i = 0; i < list.length; i += 2) keyValue(w, 9, list[i] as string, list[i + 1])
  return { list, protobuf: w.finish().slice() }
}

/** trace_id, span_id and parent_span_id: from the words of this node's spans, else from their hex. */
const ids = (w: ProtoWriter, s: FinishedSpan) => {
  if (!(s instanceof ExportedSpan)) {
    w.tag(1, LEN)
    w.hexBytes(s.traceId)
    w.tag(2, LEN)
    w.hexBytes(s.spanId)
    if (s.parentSpanId !== undefined) {
      w.tag(4, LEN)
      w.hexBytes(s.parentSpanId)
    }
    return
  }
  const t = s.trace
  w.tag(1, LEN)
  if (t.exact) w.words(t.w0, t.w1, t.w2, t.w3)
  else w.hexBytes(t.hex)
  w.tag(2, LEN)
  w.words(s.idHi, s.idLo)
  if (s.parent._tag === "Some") {
    const parent = s.parent.value
    w.tag(4, LEN)
    if (isLocalSpan(parent)) w.words(parent.idHi, parent.idLo)
    else w.hexBytes(parent.spanId)
  }
}

const span = (w: ProtoWriter, s: FinishedSpan) => {
  ids(w, s)
  w.tag(5, LEN)
  w.string(s.name)
  w.tag(6, VARINT)
  w.varint(SPAN_KIND[s.kind])
  w.tag(7, BIT64)
  w.fixed64(s.startTime)
  w.tag(8, BIT64)
  w.fixed64(s.endTime)
  if (s instanceof ExportedSpan) {
    if (s.constants !== undefined) w.raw(s.constants.protobuf)
    const list = s.attributeList
    for (let i = 0; i < list.length; i += 2) keyValue(w, 9, list[i] as string, list[i + 1])
  } else {
    s.attributes.forEach(spanAttribute, w)
  }
  if (s.events !== undefined) {
    for (const [name, time, attributes] of s.events) {
      w.tag(11, LEN)
      const at = w.begin()
      w.tag(1, BIT64)
      w.fixed64(time)
      w.tag(2, LEN)
      w.string(name)
      if (attributes !== undefined) keyValues(w, 3, Object.entries(attributes))
      w.end(at)
    }
  }
  for (let i = 0; i < s.links.length; i++) {
    const link = s.links[i]!
    w.tag(13, LEN)
    const at = w.begin()
    w.tag(1, LEN)
    w.hexBytes(link.span.traceId)
    w.tag(2, LEN)
    w.hexBytes(link.span.spanId)
    keyValues(w, 4, Object.entries(link.attributes))
    w.end(at)
  }
  w.tag(15, LEN)
  const status = w.begin()
  if (s.statusMessage !== undefined && s.statusMessage !== "") {
    w.tag(2, LEN)
    w.string(s.statusMessage)
  }
  w.tag(3, VARINT)
  w.varint(s.statusCode)
  w.end(status)
}

/** Appends one span to `w` as a ScopeSpans `spans` field (2): a batch is these, back to back (`batchFraming`). */
export const writeSpan = (w: ProtoWriter, s: FinishedSpan) => {
  w.tag(2, LEN)
  // two bytes for the length: a span is nearly always 128 to 16383 bytes, so its body is never moved
  const at = w.begin(2)
  span(w, s)
  w.end(at, 2)
}

/**
 * TracesData around batches of spans written by `writeSpan`: one ResourceSpans, one ScopeSpans. The spans are
 * written first, after `headroom` bytes left free in their writer, and `frame` puts the header (whose lengths are
 * known by then) in that room: the batch is sent from the writer's own buffer, never copied.
 */
export const batchFraming = (resource: ExportResource) => {
  const parts = new ProtoWriter(512)
  parts.tag(1, LEN)
  const res = parts.begin()
  keyValues(parts, 1, resource.attributes)
  parts.end(res)
  const resourceLength = parts.length
  parts.tag(1, LEN)
  const scope = parts.begin()
  parts.tag(1, LEN)
  parts.string(resource.scopeName)
  parts.end(scope)
  const fixed = parts.finish().slice()
  // two tags and two lengths of at most 5 bytes (a batch is far below 2^35 bytes)
  const headroom = fixed.length + 12
  return {
    headroom,
    /** The TracesData of the spans written to `w` since its headroom. */
    frame: (w: ProtoWriter): Uint8Array => {
      const spans = w.length - headroom
      // ScopeSpans { scope, spans… } inside ResourceSpans { resource, scope_spans } inside TracesData
      const scopeSpans = fixed.length - resourceLength + spans
      const resourceSpans = resourceLength + 1 + varintSize(scopeSpans) + scopeSpans
      const head = new ProtoWriter(headroom)
      head.tag(1, LEN)
      head.varint(resourceSpans)
      head.raw(fixed.subarray(0, resourceLength))
      head.tag(2, LEN)
      head.varint(scopeSpans)
      head.raw(fixed.subarray(resourceLength))
      return w.writeBefore(headroom, head.finish())
    }
  }
}

/** TracesData as protobuf bytes: one ResourceSpans with one ScopeSpans holding `spans`. */
export const encodeProtobuf = (resource: ExportResource, spans: ReadonlyArray<FinishedSpan>): Uint8Array => {
  const framing = batchFraming(resource)
  const w = new ProtoWriter(1024 + spans.length * 512, framing.headroom)
  for (const s of spans) writeSpan(w, s)
  return framing.frame(w)
}

const jsonValue = (v: unknown): unknown => {
  switch (typeof v) {
    case "string":
      return { stringValue: v }
    case "boolean":
      return { boolValue: v }
    case "number":
      return Number.isSafeInteger(v) ? { intValue: v } : { doubleValue: v }
    case "bigint":
      return { intValue: Number(v) }
  }
  if (Array.isArray(v)) return { arrayValue: { values: v.map(jsonValue) } }
  return { stringValue: Inspectable.toStringUnknown(v) }
}

const jsonAttributes = (entries: Iterable<readonly [string, unknown]>) =>
  Array.from(entries, ([key, value]) => ({ key, value: jsonValue(value) }))

/** TracesData in OTLP's JSON form (ids in hex, times as decimal strings), ready for JSON.stringify. */
export const encodeJson = (resource: ExportResource, spans: ReadonlyArray<FinishedSpan>) => ({
  resourceSpans: [{
    resource: { attributes: jsonAttributes(resource.attributes), droppedAttributesCount: 0 },
    scopeSpans: [{
      scope: { name: resource.scopeName },
      spans: spans.map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId,
        name: s.name,
        kind: SPAN_KIND[s.kind],
        startTimeUnixNano: String(s.startTime),
        endTimeUnixNano: String(s.endTime),
        attributes: jsonAttributes(s.attributes),
        droppedAttributesCount: 0,
        events: (s.events ?? []).map(([name, time, attributes]) => ({
          name,
          timeUnixNano: String(time),
          attributes: attributes === undefined ? [] : jsonAttributes(Object.entries(attributes)),
          droppedAttributesCount: 0
        })),
        droppedEventsCount: 0,
        status: s.statusMessage === undefined
          ? { code: s.statusCode }
          : { code: s.statusCode, message: s.statusMessage },
        links: s.links.map((link) => ({
          traceId: link.span.traceId,
          spanId: link.span.spanId,
          attributes: jsonAttributes(Object.entries(link.attributes)),
          droppedAttributesCount: 0
        })),
        droppedLinksCount: 0
      }))
    }]
  }]
})
