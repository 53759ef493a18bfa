import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { HttpClient, HttpClientResponse } from "@effect/platform"
import { Context, Effect, Exit, Layer, Option, Scope, type Tracer } from "effect"
import { makeExportingTracer, makeSpanExporter } from "../../src/observability/SpanExporter.js"
import { layerProtobuf } from "./OtlpReferenceEncoder.js"
import { median } from "./runs.js"

/**
 * CPU per span of the node's tracers, in one process, each through its real code down to the encoded export
 * body: a span created under a parent, given 5 attributes, ended, batched and encoded as OTLP protobuf. The
 * receiver is an HttpClient that answers 200 at once (it only sums the bodies' bytes), so what is measured
 * is the tracer and its encoding, not a socket.
 *   - library: @effect/opentelemetry's OtlpTracer (its span objects, ids and OTLP object tree), with our
 *     protobuf encoder (OtlpReferenceEncoder.ts layerProtobuf): what the node ran before SpanExporter.ts;
 *   - lean: SpanExporter.ts (Spans.ts, SpanEncoding.ts): what it runs now;
 *   - off: Effect's own in-memory tracer, which the node keeps with tracing off (no export).
 */
export type SpanCostVariant = "library" | "lean" | "off"

const receiver = (bytes: { n: number }) =>
  HttpClient.make((request) =>
    Effect.sync(() => {
      const body = request.body
      if (body._tag === "Uint8Array") bytes.n += body.body.length
      return HttpClientResponse.fromWeb(request, new Response(null, { status: 200 }))
    })
  )

const makeTracer = (variant: SpanCostVariant, scope: Scope.CloseableScope, bytes: { n: number }) => {
  const client = Layer.succeed(HttpClient.HttpClient, receiver(bytes))
  const build: Effect.Effect<Tracer.Tracer, never, HttpClient.HttpClient | Scope.Scope> = variant === "library"
    ? OtlpTracer.make({
      url: "http://127.0.0.1:1/v1/traces",
      resource: { serviceName: "switchyard", serviceVersion: "0", attributes: { "service.instance.id": "x" } },
      exportInterval: "1 hour"
    }).pipe(Effect.provide(layerProtobuf))
    : variant === "lean"
    ? Effect.map(
      makeSpanExporter({
        url: "http://127.0.0.1:1/v1/traces",
        protocol: "http/protobuf",
        headers: {},
        resource: {
          attributes: [["service.instance.id", "x"], ["service.name", "switchyard"], ["service.version", "0"]],
          scopeName: "switchyard"
        },
        exportIntervalMs: 3_600_000
      }),
      (exporter) => makeExportingTracer(exporter)
    )
    : Effect.tracer
  return Effect.runSync(build.pipe(Effect.provide(client), Scope.extend(scope)))
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

/** CPU µs per span of `spans` spans through one tracer, its final flush (scope close) included. */
const measureOnce = async (variant: SpanCostVariant, spans: number) => {
  const scope = Effect.runSync(Scope.make())
  const bytes = { n: 0 }
  const tracer = makeTracer(variant, scope, bytes)
  const cpu = process.cpuUsage()
  let time = BigInt(Date.now()) * 1_000_000n
  let parent: Tracer.Span | undefined
  for (let i = 0; i < spans; i++) {
    if (i % 16 === 0) {
      parent?.end(time++, Exit.void)
      parent = tracer.span("task.run", Option.none(), Context.empty(), [], time++, "internal")
    }
    const span = tracer.span("sql.execute", Option.some(parent!), Context.empty(), [], time++, "client")
    span.attribute("db.system", "postgresql")
    span.attribute("db.statement", "SELECT id, status FROM tasks WHERE id = $1")
    span.attribute("db.operation.name", "SELECT")
    span.attribute("db.response.rows", i % 7)
    span.attribute("switchyard.cached", i % 2 === 0)
    span.end(time++, Exit.void)
    // the exporters' batch fibers get their turn, as between requests
    if (i % 512 === 511) await tick()
  }
  parent?.end(time++, Exit.void)
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const used = process.cpuUsage(cpu)
  return { usPerSpan: (used.user + used.system) / spans, bytesPerSpan: bytes.n / spans }
}

/** Each variant `rounds` times, interleaved, after a warm-up: the median CPU µs per span and their range. */
export const measureSpanCost = async (options: { readonly spans: number; readonly rounds: number }) => {
  const variants: ReadonlyArray<SpanCostVariant> = ["library", "lean", "off"]
  for (const v of variants) await measureOnce(v, Math.min(options.spans, 20_000))
  const seen: Record<SpanCostVariant, Array<number>> = { library: [], lean: [], off: [] }
  const bytes: Record<SpanCostVariant, number> = { library: 0, lean: 0, off: 0 }
  for (let round = 0; round < options.rounds; round++) {
    for (const v of variants) {
      const r = await measureOnce(v, options.spans)
      seen[v].push(r.usPerSpan)
      bytes[v] = r.bytesPerSpan
    }
  }
  const summary = (v: SpanCostVariant) => ({
    usPerSpan: median(seen[v]),
    min: Math.min(...seen[v]),
    max: Math.max(...seen[v]),
    bytesPerSpan: bytes[v]
  })
  return { library: summary("library"), lean: summary("lean"), off: summary("off") }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await measureSpanCost({ spans: 100_000, rounds: 5 })
  console.log(JSON.stringify(result, null, 2))
  console.log(`lean / library CPU per span: ${(result.lean.usPerSpan / result.library.usPerSpan).toFixed(3)}`)
}
