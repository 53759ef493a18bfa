import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { HttpBody } from "@effect/platform"
import { Effect, Layer } from "effect"

/**
 * The OTLP/HTTP protobuf encoder the node used before its own tracer (src/observability/SpanExporter.ts):
 * TracesData from the OTLP object tree of @effect/opentelemetry's OtlpTracer, written with @bufbuild/protobuf's
 * BinaryWriter (the library's own encoder costs ~100 µs a span). Kept outside the node as a reference: the
 * tests compare the node's encoding with it (it writes the library's bytes), and bench/support/spanCost.ts
 * measures the old path with it.
 */

type Json = any

const hexBytes = (hex: string) => Buffer.from(hex, "hex")

const anyValue = (w: BinaryWriter, v: Json): void => {
  if (v.stringValue !== undefined && v.stringValue !== null) w.tag(1, WireType.LengthDelimited).string(v.stringValue)
  else if (v.boolValue !== undefined && v.boolValue !== null) w.tag(2, WireType.Varint).bool(v.boolValue)
  else if (v.intValue !== undefined && v.intValue !== null) w.tag(3, WireType.Varint).int64(v.intValue)
  else if (v.doubleValue !== undefined && v.doubleValue !== null) w.tag(4, WireType.Bit64).double(v.doubleValue)
  else if (v.arrayValue !== undefined) {
    w.tag(5, WireType.LengthDelimited).fork()
    for (const item of v.arrayValue.values ?? []) message(w, 1, item, anyValue)
    w.join()
  } else if (v.kvlistValue !== undefined) {
    w.tag(6, WireType.LengthDelimited).fork()
    for (const kv of v.kvlistValue.values ?? []) message(w, 1, kv, keyValue)
    w.join()
  } else if (v.bytesValue !== undefined) w.tag(7, WireType.LengthDelimited).bytes(Buffer.from(v.bytesValue, "base64"))
}

const keyValue = (w: BinaryWriter, kv: Json): void => {
  w.tag(1, WireType.LengthDelimited).string(kv.key)
  message(w, 2, kv.value, anyValue)
}

const message = (w: BinaryWriter, field: number, value: Json, encode: (w: BinaryWriter, value: Json) => void) => {
  w.tag(field, WireType.LengthDelimited).fork()
  encode(w, value)
  w.join()
}

const attributes = (w: BinaryWriter, field: number, list: ReadonlyArray<Json> | undefined) => {
  if (list !== undefined) { for (const kv of list) message(w, field, kv, keyValue) }
}

const optionalString = (w: BinaryWriter, field: number, value: string | undefined) => {
  if (value !== undefined && value !== "") w.tag(field, WireType.LengthDelimited).string(value)
}

const count = (w: BinaryWriter, field: number, value: number | undefined) => {
  if (value !== undefined && value > 0) w.tag(field, WireType.Varint).uint32(value)
}

const event = (w: BinaryWriter, e: Json) => {
  w.tag(1, WireType.Bit64).fixed64(e.timeUnixNano)
  w.tag(2, WireType.LengthDelimited).string(e.name)
  attributes(w, 3, e.attributes)
  count(w, 4, e.droppedAttributesCount)
}

const link = (w: BinaryWriter, l: Json) => {
  w.tag(1, WireType.LengthDelimited).bytes(hexBytes(l.traceId))
  w.tag(2, WireType.LengthDelimited).bytes(hexBytes(l.spanId))
  optionalString(w, 3, l.traceState)
  attributes(w, 4, l.attributes)
  count(w, 5, l.droppedAttributesCount)
  if (l.flags !== undefined) w.tag(6, WireType.Bit32).fixed32(l.flags)
}

const span = (w: BinaryWriter, s: Json) => {
  w.tag(1, WireType.LengthDelimited).bytes(hexBytes(s.traceId))
  w.tag(2, WireType.LengthDelimited).bytes(hexBytes(s.spanId))
  optionalString(w, 3, s.traceState)
  if (s.parentSpanId !== undefined) w.tag(4, WireType.LengthDelimited).bytes(hexBytes(s.parentSpanId))
  w.tag(5, WireType.LengthDelimited).string(s.name)
  w.tag(6, WireType.Varint).int32(s.kind)
  w.tag(7, WireType.Bit64).fixed64(s.startTimeUnixNano)
  w.tag(8, WireType.Bit64).fixed64(s.endTimeUnixNano)
  attributes(w, 9, s.attributes)
  count(w, 10, s.droppedAttributesCount)
  for (const e of s.events ?? []) message(w, 11, e, event)
  count(w, 12, s.droppedEventsCount)
  for (const l of s.links ?? []) message(w, 13, l, link)
  count(w, 14, s.droppedLinksCount)
  message(w, 15, s.status, (w, status: Json) => {
    optionalString(w, 2, status.message)
    w.tag(3, WireType.Varint).int32(status.code)
  })
  if (s.flags !== undefined) w.tag(16, WireType.Bit32).fixed32(s.flags)
}

/** TracesData as protobuf bytes. */
export const encodeTraces = (data: Json): Uint8Array => {
  const w = new BinaryWriter()
  for (const rs of data.resourceSpans ?? []) {
    message(w, 1, rs, (w, rs: Json) => {
      message(w, 1, rs.resource, (w, resource: Json) => {
        attributes(w, 1, resource.attributes)
        count(w, 2, resource.droppedAttributesCount)
      })
      for (const ss of rs.scopeSpans ?? []) {
        message(w, 2, ss, (w, ss: Json) => {
          message(w, 1, ss.scope, (w, scope: Json) => {
            w.tag(1, WireType.LengthDelimited).string(scope.name)
            optionalString(w, 2, scope.version)
            attributes(w, 3, scope.attributes)
            count(w, 4, scope.droppedAttributesCount)
          })
          for (const s of ss.spans ?? []) message(w, 2, s, span)
          optionalString(w, 3, ss.schemaUrl)
        })
      }
      optionalString(w, 3, rs.schemaUrl)
    })
  }
  return w.finish()
}

/** The library's protobuf serialization, with traces encoded here. */
export const layerProtobuf = Layer.effect(
  OtlpSerialization.OtlpSerialization,
  Effect.map(OtlpSerialization.OtlpSerialization, (library) => ({
    ...library,
    traces: (data: Json) => HttpBody.uint8Array(encodeTraces(data), "application/x-protobuf")
  }))
).pipe(Layer.provide(OtlpSerialization.layerProtobuf))
