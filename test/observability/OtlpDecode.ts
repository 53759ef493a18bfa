import { BinaryReader, type WireType } from "@bufbuild/protobuf/wire"

// An independent reading of what the node's own exporter writes (SpanEncoding.ts): @bufbuild/protobuf's wire
// reader, field numbers from opentelemetry/proto/trace/v1/trace.proto and common/v1/common.proto.
type Decoded = Record<string, any>
const fields = (
  bytes: Uint8Array,
  read: (r: BinaryReader, field: number, wire: WireType, into: Decoded) => boolean
) => {
  const r = new BinaryReader(bytes)
  const into: Decoded = {}
  while (r.pos < r.len) {
    const [field, wire] = r.tag()
    if (!read(r, field, wire, into)) r.skip(wire)
  }
  return into
}
const push = (into: Decoded, key: string, value: unknown) => ((into[key] ??= []) as Array<unknown>).push(value)
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const decodeAnyValue = (bytes: Uint8Array): unknown =>
  fields(bytes, (r, f, _, o) => {
    if (f === 1) o.v = r.string()
    else if (f === 2) o.v = r.bool()
    else if (f === 3) o.v = BigInt(r.int64())
    else if (f === 4) o.v = r.double()
    else if (f === 5) {
      o.v = fields(r.bytes(), (r, f, _, a) => f === 1 && (push(a, "values", decodeAnyValue(r.bytes())), true)).values ??
        []
    } else return false
    return true
  }).v
const decodeAttributes = (list: Array<Uint8Array> | undefined) =>
  Object.fromEntries((list ?? []).map((kv) => {
    const d = fields(kv, (r, f, _, o) => {
      if (f === 1) o.key = r.string()
      else if (f === 2) o.value = decodeAnyValue(r.bytes())
      else return false
      return true
    })
    return [d.key, d.value]
  }))
export const decodeSpan = (bytes: Uint8Array) => {
  const s = fields(bytes, (r, f, _, o) => {
    if (f === 1) o.traceId = hex(r.bytes())
    else if (f === 2) o.spanId = hex(r.bytes())
    else if (f === 4) o.parentSpanId = hex(r.bytes())
    else if (f === 5) o.name = r.string()
    else if (f === 6) o.kind = r.int32()
    else if (f === 7) o.start = BigInt(r.fixed64())
    else if (f === 8) o.end = BigInt(r.fixed64())
    else if (f === 9 || f === 11 || f === 13 || f === 15) push(o, String(f), r.bytes())
    else return false
    return true
  })
  const events = (s["11"] ?? []).map((e: Uint8Array) => {
    const d = fields(e, (r, f, _, o) => {
      if (f === 1) o.time = BigInt(r.fixed64())
      else if (f === 2) o.name = r.string()
      else if (f === 3) push(o, "attributes", r.bytes())
      else return false
      return true
    })
    return { name: d.name, time: d.time, attributes: decodeAttributes(d.attributes) }
  })
  const links = (s["13"] ?? []).map((l: Uint8Array) => {
    const d = fields(l, (r, f, _, o) => {
      if (f === 1) o.traceId = hex(r.bytes())
      else if (f === 2) o.spanId = hex(r.bytes())
      else if (f === 4) push(o, "attributes", r.bytes())
      else return false
      return true
    })
    return { traceId: d.traceId, spanId: d.spanId, attributes: decodeAttributes(d.attributes) }
  })
  const status = fields(s["15"]![0], (r, f, _, o) => {
    if (f === 2) o.message = r.string()
    else if (f === 3) o.code = r.int32()
    else return false
    return true
  })
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    parentSpanId: s.parentSpanId,
    name: s.name,
    kind: s.kind,
    start: s.start,
    end: s.end,
    attributes: decodeAttributes(s["9"]),
    events,
    links,
    status
  }
}
export const decodeTraces = (bytes: Uint8Array) =>
  fields(bytes, (r, f, _, o) => {
    if (f !== 1) return false
    push(
      o,
      "resourceSpans",
      fields(r.bytes(), (r, f, _, rs) => {
        if (f === 1) {
          rs.resource = decodeAttributes(
            fields(r.bytes(), (r, f, _, o) => f === 1 && (push(o, "a", r.bytes()), true)).a
          )
        } else if (f === 2) {
          push(
            rs,
            "scopeSpans",
            fields(r.bytes(), (r, f, _, ss) => {
              if (f === 1) ss.scope = fields(r.bytes(), (r, f, _, o) => f === 1 && ((o.name = r.string()), true)).name
              else if (f === 2) push(ss, "spans", decodeSpan(r.bytes()))
              else return false
              return true
            })
          )
        } else return false
        return true
      })
    )
    return true
  })
