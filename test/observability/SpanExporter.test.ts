import { FetchHttpClient } from "@effect/platform"
import { Context, Effect, Exit, Option, Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  makeExportingTracer,
  makeSpanExporter,
  type SpanExporterOptions
} from "../../src/observability/SpanExporter.js"
import { decodeTraces } from "./OtlpDecode.js"
import { eventually } from "./support.js"

/** A real OTLP/HTTP receiver on 127.0.0.1 that keeps every request's headers and body, and answers `status`. */
const startRawReceiver = async () => {
  const requests: Array<{ readonly headers: Http.IncomingHttpHeaders; readonly body: Buffer }> = []
  const state = { status: 200 }
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      requests.push({ headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(state.status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    requests,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
type Receiver = Awaited<ReturnType<typeof startRawReceiver>>

const resource = { attributes: [["service.name", "exporter-test"]] as const, scopeName: "exporter-test" }

/** An exporter and its tracer in a scope of their own, closed (and so flushed) by `close`. */
const startExporter = (options: Partial<SpanExporterOptions> & { readonly url: string }) => {
  const scope = Effect.runSync(Scope.make())
  const exporter = Effect.runSync(
    makeSpanExporter({
      protocol: "http/protobuf",
      headers: { authorization: "Bearer t" },
      resource,
      exportIntervalMs: 60_000,
      ...options
    }).pipe(Effect.provide(FetchHttpClient.layer), Scope.extend(scope))
  )
  const tracer = makeExportingTracer(exporter)
  const spans = (n: number, name = "op") => {
    for (let i = 0; i < n; i++) {
      const span = tracer.span(name, Option.none(), Context.empty(), [], BigInt(i + 1) * 1000n, "internal")
      span.attribute("i", i)
      span.end(BigInt(i + 1) * 1000n + 10n, Exit.void)
    }
  }
  return { exporter, spans, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const spansReceived = (receiver: Receiver) =>
  receiver.requests.flatMap((r) => decodeTraces(new Uint8Array(r.body)).resourceSpans[0].scopeSpans[0].spans)

describe("the node's span exporter (SpanExporter.ts) against a real OTLP/HTTP receiver", () => {
  let receiver: Receiver
  beforeAll(async () => {
    receiver = await startRawReceiver()
  })
  afterAll(() => receiver.close())

  it("sends a full batch at once, the rest at shutdown, as protobuf with the configured headers", async () => {
    receiver.requests.length = 0
    const node = startExporter({ url: receiver.url, maxBatchSize: 4 })
    node.spans(5)
    // the first four fill a batch: sent without waiting for the (one-minute) interval
    await eventually(() => receiver.requests.length === 1 || undefined)
    expect(spansReceived(receiver).map((s) => s.attributes.i)).toEqual([0n, 1n, 2n, 3n])
    // counted once its answer is read: closing before that interrupts the count, not the delivery
    await eventually(() => node.exporter.stats.exported === 4 || undefined)
    await node.close()
    const spans = spansReceived(receiver)
    expect(spans.map((s) => s.attributes.i)).toEqual([0n, 1n, 2n, 3n, 4n])
    expect(spans[4]).toMatchObject({ name: "op", kind: 1, start: 5000n, end: 5010n, status: { code: 1 } })
    const request = receiver.requests[0]!
    expect(request.headers["content-type"]).toBe("application/x-protobuf")
    expect(request.headers["authorization"]).toBe("Bearer t")
    expect(decodeTraces(new Uint8Array(request.body)).resourceSpans[0].resource).toEqual({
      "service.name": "exporter-test"
    })
    expect(node.exporter.stats).toMatchObject({ exported: 5, dropped: 0, failed: 0, requests: 2 })
  })

  it("encodes ended spans in groups without losing or reordering any across groups and batches", async () => {
    receiver.requests.length = 0
    const node = startExporter({ url: receiver.url, maxBatchSize: 100 })
    node.spans(150)
    // the first hundred complete a batch (one group of 64 encoded, then the rest as they complete it): sent at once
    await eventually(() => receiver.requests.length === 1 || undefined)
    await eventually(() => node.exporter.stats.exported === 100 || undefined)
    await node.close()
    expect(receiver.requests).toHaveLength(2)
    expect(spansReceived(receiver).map((s) => Number(s.attributes.i))).toEqual(Array.from({ length: 150 }, (_, i) => i))
    expect(node.exporter.stats).toMatchObject({ exported: 150, dropped: 0, failed: 0 })
  })

  it("drops and counts spans past the queue's bound instead of holding them", async () => {
    receiver.requests.length = 0
    const node = startExporter({ url: receiver.url, maxQueueSize: 3, maxBatchSize: 100 })
    node.spans(10)
    expect(node.exporter.stats.dropped).toBe(7)
    await node.close()
    expect(spansReceived(receiver)).toHaveLength(3)
  })

  it("counts a refused export as lost spans and keeps exporting, without failing the spans' callers", async () => {
    receiver.requests.length = 0
    receiver.state.status = 503
    const node = startExporter({ url: receiver.url, maxBatchSize: 2 })
    node.spans(2)
    await eventually(() => node.exporter.stats.failed === 2 || undefined)
    receiver.state.status = 200
    node.spans(2)
    await eventually(() => node.exporter.stats.exported === 2 || undefined)
    await node.close()
    expect(receiver.requests).toHaveLength(2)
  })

  it("sends what is queued every export interval (OTEL_BSP_SCHEDULE_DELAY), short of a full batch", async () => {
    receiver.requests.length = 0
    const node = startExporter({ url: receiver.url, exportIntervalMs: 50 })
    node.spans(3)
    await eventually(() => spansReceived(receiver).length === 3 || undefined)
    node.spans(1)
    await eventually(() => spansReceived(receiver).length === 4 || undefined)
    // the receiver has the body before the exporter has its answer: counted once the 200 is read
    await eventually(() => node.exporter.stats.exported === 4 || undefined)
    await node.close()
    expect(node.exporter.stats).toMatchObject({ exported: 4, requests: 2 })
  })

  it("sends OTLP JSON with http/json", async () => {
    receiver.requests.length = 0
    const node = startExporter({ url: receiver.url, protocol: "http/json" })
    node.spans(2, "json op")
    await node.close()
    expect(receiver.requests[0]!.headers["content-type"]).toBe("application/json")
    const body = JSON.parse(receiver.requests[0]!.body.toString("utf8"))
    const spans = body.resourceSpans[0].scopeSpans[0].spans
    expect(spans.map((s: any) => [s.name, s.startTimeUnixNano, s.attributes[0]])).toEqual([
      ["json op", "1000", { key: "i", value: { intValue: 0 } }],
      ["json op", "2000", { key: "i", value: { intValue: 1 } }]
    ])
  })
})
