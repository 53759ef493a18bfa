import { BinaryReader, type WireType } from "@bufbuild/protobuf/wire"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { Effect, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import { encodeTraces } from "../../src/observability/OtlpProtobuf.js"
import { encodeJson, encodeProtobuf, type FinishedSpan, SPAN_KIND } from "../../src/observability/SpanEncoding.js"
import { makeExportingTracer } from "../../src/observability/SpanExporter.js"

const span = (i: number) => ({
  traceId: "0af7651916cd43dd8448eb211c80319c",
  spanId: `b7ad6b71692033${String(i % 100).padStart(2, "0")}`,
  ...(i % 3 === 0 ? {} : { parentSpanId: "00f067aa0ba902b7" }),
  name: i % 2 === 0 ? "sql.execute" : "http.server POST ü",
  kind: i % 5,
  startTimeUnixNano: "1700000000000000000",
  endTimeUnixNano: String(1700000000000000000n + BigInt(i) * 1_234_567n),
  attributes: [
    { key: "db.statement", value: { stringValue: "INSERT INTO tasks (id) VALUES ($1) — ✓" } },
    { key: "http.response.status_code", value: { intValue: 200 + i } },
    { key: "ok", value: { boolValue: i % 2 === 0 } },
    { key: "ratio", value: { doubleValue: 0.25 * i } },
    { key: "list", value: { arrayValue: { values: [{ stringValue: "a" }, { intValue: 2 }] } } },
    { key: "map", value: { kvlistValue: { values: [{ key: "k", value: { stringValue: "v" } }] } } }
  ],
  droppedAttributesCount: i % 4,
  events: i % 2 === 0 ? [] : [{
    timeUnixNano: "1700000000000000500",
    name: "exception",
    attributes: [
      { key: "exception.message", value: { stringValue: "boom" } }
    ],
    droppedAttributesCount: 0
  }],
  droppedEventsCount: 0,
  links: i % 7 === 0
    ? [{
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      attributes: [],
      droppedAttributesCount: 0
    }]
    : [],
  droppedLinksCount: 0,
  status: i % 3 === 0 ? { code: 2, message: "Error: boom" } : { code: 1 }
})

const tracesData = (n: number) => ({
  resourceSpans: [{
    resource: {
      attributes: [
        { key: "service.name", value: { stringValue: "switchyard" } },
        { key: "service.instance.id", value: { stringValue: "9f0c…" } }
      ],
      droppedAttributesCount: 0
    },
    scopeSpans: [{ scope: { name: "switchyard" }, spans: Array.from({ length: n }, (_, i) => span(i)) }]
  }]
})

// the library's own encoder, through its public serialization service
const library = Effect.runSync(Effect.provide(OtlpSerialization.OtlpSerialization, OtlpSerialization.layerProtobuf))
const libraryBytes = (data: unknown) => Buffer.from((library.traces(data as any) as any).body as Uint8Array)

describe("OTLP protobuf encoding of traces", () => {
  it("writes the same bytes as @effect/opentelemetry's encoder, for every kind of field", () => {
    for (const n of [0, 1, 2, 50]) {
      const data = tracesData(n)
      expect(Buffer.from(encodeTraces(data)).equals(libraryBytes(data))).toBe(true)
    }
  })

  it("writes a negative integer as int64's ten-byte two's complement (the library writes one wrong byte)", () => {
    const data = tracesData(1)
    data.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes = [{ key: "n", value: { intValue: -5 } }] as any
    // KeyValue { key: "n", value: AnyValue { int_value (3): -5 } }
    const keyValue = Buffer.from("0a016e120b18fbffffffffffffffff01", "hex")
    expect(Buffer.from(encodeTraces(data)).includes(keyValue)).toBe(true)
  })
})

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
const decodeSpan = (bytes: Uint8Array) => {
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
const decodeTraces = (bytes: Uint8Array) =>
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

/** Spans of every shape, made through the node's tracer (Effect.withSpan and friends) and caught as they end. */
const madeSpans = (options: { readonly bigint: boolean }) => {
  const ended: Array<FinishedSpan> = []
  const tracer = makeExportingTracer({ push: (s) => ended.push(s) })
  const long = "é".repeat(9000) // 18,000 bytes: a three-byte length, and the writer grows past its first buffer
  const program = Effect.gen(function*() {
    yield* Effect.void.pipe(
      Effect.withSpan("http.server POST ü", {
        kind: "server",
        attributes: {
          "http.request.method": "POST",
          "http.response.status_code": 200,
          "n.negative": -5,
          "n.double": 0.25,
          "n.huge": 2 ** 60,
          // past 2^53: exact here, rounded by the JSON form's number
          ...(options.bigint ? { "n.bigint": 12345678901234567n } : {}),
          ok: true,
          list: ["a", 2, false],
          object: { a: 1 },
          long
        }
      })
    )
    yield* Effect.fail(new Error("boom")).pipe(
      Effect.withSpan("sql.execute", { kind: "client", attributes: { "db.statement": "SELECT 1" } }),
      Effect.ignore,
      Effect.withSpan("task.run", {
        links: [{
          _tag: "SpanLink",
          span: Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" }),
          attributes: { "link.kind": "follows" }
        }]
      })
    )
    yield* Effect.annotateCurrentSpan("x", 1).pipe(
      Effect.zipRight(Effect.sync(() => undefined)),
      Effect.tap(() => Effect.currentSpan.pipe(Effect.map((s) => s.event("checkpoint", 1n, { step: "one" })))),
      Effect.withSpan("with event")
    )
    yield* Effect.interrupt.pipe(Effect.withSpan("interrupted"), Effect.exit)
  })
  Effect.runSync(program.pipe(Effect.withTracer(tracer)))
  return ended
}

describe("OTLP protobuf encoding straight from spans (SpanEncoding.ts)", () => {
  const resource = {
    attributes: [["service.name", "switchyard"], ["service.instance.id", "9f0c"], [
      "service.version",
      "0.2.0"
    ]] as const,
    scopeName: "switchyard"
  }

  it("writes what an independent protobuf reader reads back as each span's fields", () => {
    const spans = madeSpans({ bigint: true })
    const decoded = decodeTraces(encodeProtobuf(resource, spans))
    expect(decoded.resourceSpans).toHaveLength(1)
    const rs = decoded.resourceSpans[0]
    expect(rs.resource).toEqual({
      "service.name": "switchyard",
      "service.instance.id": "9f0c",
      "service.version": "0.2.0"
    })
    expect(rs.scopeSpans[0].scope).toBe("switchyard")
    const out: Array<ReturnType<typeof decodeSpan>> = rs.scopeSpans[0].spans
    expect(out.map((s) => s.name)).toEqual(spans.map((s) => s.name))
    out.forEach((d, i) => {
      const s = spans[i]!
      expect(d.traceId).toBe(s.traceId)
      expect(d.traceId).toMatch(/^[0-9a-f]{32}$/)
      expect(d.spanId).toBe(s.spanId)
      expect(d.parentSpanId).toBe(s.parentSpanId)
      expect(d.kind).toBe(SPAN_KIND[s.kind])
      expect(d.start).toBe(s.startTime)
      expect(d.end).toBe(s.endTime)
    })
    const byName = (name: string) => out.find((s) => s.name === name)!
    expect(byName("http.server POST ü").kind).toBe(2)
    expect(byName("http.server POST ü").attributes).toEqual({
      "http.request.method": "POST",
      "http.response.status_code": 200n,
      "n.negative": -5n,
      "n.double": 0.25,
      "n.huge": 2 ** 60,
      "n.bigint": 12345678901234567n,
      ok: true,
      list: ["a", 2n, false],
      object: "{\n  \"a\": 1\n}",
      long: "é".repeat(9000)
    })
    expect(byName("http.server POST ü").status).toEqual({ code: 1 })
    const failed = byName("sql.execute")
    expect(failed.status).toEqual({ code: 2, message: "boom" })
    expect(failed.events).toHaveLength(1)
    expect(failed.events[0].name).toBe("exception")
    expect(failed.events[0].time).toBe(failed.end)
    expect(failed.events[0].attributes).toMatchObject({ "exception.type": "Error", "exception.message": "boom" })
    expect(failed.events[0].attributes["exception.stacktrace"]).toContain("boom")
    const run = byName("task.run")
    expect(failed.parentSpanId).toBe(run.spanId)
    expect(run.links).toEqual([{
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      attributes: { "link.kind": "follows" }
    }])
    expect(byName("with event").events).toEqual([{ name: "checkpoint", time: 1n, attributes: { step: "one" } }])
    expect(byName("with event").attributes).toEqual({ x: 1n })
    expect(byName("interrupted").status.code).toBe(1)
  })

  // encodeTraces writes the library's bytes (above), save the library's wrong negative int64
  it("writes the same bytes as the library-checked encoder given the OTLP JSON form of the same spans", () => {
    const spans = madeSpans({ bigint: false })
    const json = encodeJson(resource, spans)
    expect(Buffer.from(encodeProtobuf(resource, spans)).equals(Buffer.from(encodeTraces(json)))).toBe(true)
  })
})
