import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { encodeTraces } from "../../src/observability/OtlpProtobuf.js"

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
