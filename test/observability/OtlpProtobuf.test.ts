import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { Context, Effect, Exit, Option, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import { encodeTraces } from "../../bench/support/OtlpReferenceEncoder.js"
import {
  encodeConstantAttributes,
  encodeJson,
  encodeProtobuf,
  type FinishedSpan,
  SPAN_KIND
} from "../../src/observability/SpanEncoding.js"
import { makeExportingTracer } from "../../src/observability/SpanExporter.js"
import { ExportedSpan } from "../../src/observability/Spans.js"
import { decodeSpan, decodeTraces } from "./OtlpDecode.js"

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

  it("exports attributes encoded once for many spans (a connector call's target) as if each span had set them", () => {
    const ended: Array<FinishedSpan> = []
    const tracer = makeExportingTracer({ push: (s) => ended.push(s) })
    const constants = encodeConstantAttributes(["switchyard.connector.id", "c-1", "http.request.method", "GET", "n", 7])
    const make = (name: string) => tracer.span(name, Option.none(), Context.empty(), [], 1n, "client") as ExportedSpan
    const shared = make("shared")
    shared.constantAttributes(constants)
    shared.attribute("http.response.status_code", 200)
    shared.end(2n, Exit.void)
    const oneByOne = make("one by one")
    for (let i = 0; i < constants.list.length; i += 2) {
      oneByOne.attribute(constants.list[i] as string, constants.list[i + 1])
    }
    oneByOne.attribute("http.response.status_code", 200)
    oneByOne.end(2n, Exit.void)
    // a constant's key set again: the span's own value wins, once
    const overridden = make("overridden")
    overridden.constantAttributes(constants)
    overridden.attribute("http.request.method", "POST")
    overridden.end(2n, Exit.void)
    // constants set after another attribute: set one by one
    const late = make("late")
    late.attribute("first", true)
    late.constantAttributes(constants)
    late.end(2n, Exit.void)

    const out = decodeTraces(encodeProtobuf(resource, ended)).resourceSpans[0].scopeSpans[0].spans
    const expected = { "switchyard.connector.id": "c-1", "http.request.method": "GET", n: 7n }
    expect(out[0].attributes).toEqual({ ...expected, "http.response.status_code": 200n })
    expect(out[1].attributes).toEqual(out[0].attributes)
    expect(out[2].attributes).toEqual({ ...expected, "http.request.method": "POST" })
    expect(out[3].attributes).toEqual({ first: true, ...expected })
    // the Map view (and so the JSON form) holds them too
    expect(Object.fromEntries(shared.attributes)).toEqual({
      "switchyard.connector.id": "c-1",
      "http.request.method": "GET",
      n: 7,
      "http.response.status_code": 200
    })
    expect(encodeJson(resource, [shared]).resourceSpans[0].scopeSpans[0].spans[0].attributes).toHaveLength(4)
  })

  // encodeTraces writes the library's bytes (above), save the library's wrong negative int64
  it("writes the same bytes as the library-checked encoder given the OTLP JSON form of the same spans", () => {
    const spans = madeSpans({ bigint: false })
    const json = encodeJson(resource, spans)
    expect(Buffer.from(encodeProtobuf(resource, spans)).equals(Buffer.from(encodeTraces(json)))).toBe(true)
  })
})
