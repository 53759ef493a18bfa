import { HttpBody, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Option, type Scope, Tracer } from "effect"
import { encodeJson, encodeProtobuf, type ExportResource, type FinishedSpan } from "./SpanEncoding.js"
import { ExportedSpan, randomHex, UnsampledSpan } from "./Spans.js"

export interface SpanExporterOptions {
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  /** OTEL_EXPORTER_OTLP_HEADERS, and the user agent. */
  readonly headers: Record<string, string>
  readonly resource: ExportResource
  /** OTEL_BSP_SCHEDULE_DELAY. */
  readonly exportIntervalMs: number
  /** Spans held for the next export at most; past it a span is dropped (and counted), never waited for. */
  readonly maxQueueSize?: number
  /** Spans per export request; a queue this long is exported without waiting for the interval. */
  readonly maxBatchSize?: number
  readonly exportTimeoutMs?: number
  readonly shutdownTimeoutMs?: number
}

export interface SpanExporter {
  /** Queues an ended span: never blocks, never fails. */
  readonly push: (span: FinishedSpan) => void
  /** Totals since start, for tests and benchmarks. */
  readonly stats: { exported: number; dropped: number; failed: number; requests: number }
}

/**
 * Batches ended spans and sends them to an OTLP/HTTP receiver from one scoped fiber: every export interval,
 * as soon as a full batch is queued, and once more when the scope closes (within the shutdown timeout). The
 * spans' own request paths only push onto an array. A failed export drops its spans: no retries holding the
 * queue, and failures and drops are logged at most once per interval, never raised into a request.
 */
export const makeSpanExporter = (
  options: SpanExporterOptions
): Effect.Effect<SpanExporter, never, HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    const maxQueueSize = options.maxQueueSize ?? 8192
    const maxBatchSize = options.maxBatchSize ?? 1024
    const client = HttpClient.filterStatusOk(yield* HttpClient.HttpClient)
    const request = HttpClientRequest.post(options.url, { headers: options.headers })
    const body = options.protocol === "http/json"
      ? (spans: ReadonlyArray<FinishedSpan>) => HttpBody.unsafeJson(encodeJson(options.resource, spans))
      : (spans: ReadonlyArray<FinishedSpan>) =>
        HttpBody.uint8Array(encodeProtobuf(options.resource, spans), "application/x-protobuf")

    const stats = { exported: 0, dropped: 0, failed: 0, requests: 0 }
    let queue: Array<FinishedSpan> = []
    const wake = yield* Effect.makeLatch(false)
    const push = (span: FinishedSpan) => {
      if (queue.length >= maxQueueSize) {
        stats.dropped++
        return
      }
      queue.push(span)
      if (queue.length === maxBatchSize) wake.unsafeOpen()
    }

    let lastFailure: unknown = undefined
    const send = (batch: ReadonlyArray<FinishedSpan>) =>
      Effect.suspend(() => {
        stats.requests++
        return client.execute(HttpClientRequest.setBody(request, body(batch)))
      }).pipe(
        Effect.flatMap((response) => response.arrayBuffer),
        Effect.timeout(options.exportTimeoutMs ?? 10_000),
        Effect.matchCause({
          onSuccess: () => void (stats.exported += batch.length),
          onFailure: (cause) => {
            stats.failed += batch.length
            lastFailure = cause
          }
        })
      )
    const exportQueued = Effect.suspend(() => {
      const spans = queue
      queue = []
      if (spans.length <= maxBatchSize) return spans.length === 0 ? Effect.void : send(spans)
      const batches: Array<ReadonlyArray<FinishedSpan>> = []
      for (let i = 0; i < spans.length; i += maxBatchSize) batches.push(spans.slice(i, i + maxBatchSize))
      return Effect.forEach(batches, send, { discard: true })
    })

    // what went wrong since the last report, once per interval at most
    let reported = { dropped: 0, failed: 0, at: 0 }
    const report = Effect.suspend(() => {
      const dropped = stats.dropped - reported.dropped
      const failed = stats.failed - reported.failed
      const now = Date.now()
      if ((dropped === 0 && failed === 0) || now - reported.at < options.exportIntervalMs) return Effect.void
      reported = { dropped: stats.dropped, failed: stats.failed, at: now }
      return Effect.logWarning(
        `OTLP trace export to ${options.url}: ${failed} spans lost to failed exports, ${dropped} dropped ` +
          `with the queue full (${maxQueueSize})`,
        ...(failed > 0 ? [lastFailure] : [])
      )
    })

    yield* Effect.addFinalizer(() =>
      exportQueued.pipe(
        Effect.timeoutOption(options.shutdownTimeoutMs ?? 3000),
        Effect.zipRight(report),
        Effect.withTracerEnabled(false)
      )
    )
    yield* Effect.gen(function*() {
      for (;;) {
        yield* Effect.timeoutOption(wake.await, options.exportIntervalMs)
        // closed before exporting: a batch filled meanwhile opens it again and is sent at once
        wake.unsafeClose()
        yield* exportQueued
        yield* report
      }
    }).pipe(
      Effect.withTracerEnabled(false),
      Effect.annotateLogs({ module: "SpanExporter" }),
      Effect.forkScoped,
      Effect.interruptible
    )
    return { push, stats }
  })

/**
 * The node's tracer: a sampled span is an ExportedSpan pushed to `exporter` when it ends; one the sampler
 * drops is an UnsampledSpan (ids for its children, nothing exported). No sampler: every span sampled.
 */
export const makeExportingTracer = (
  exporter: Pick<SpanExporter, "push">,
  sample?: (parent: Option.Option<Tracer.AnySpan>, traceId: () => string) => boolean
): Tracer.Tracer => {
  const push = exporter.push
  return Tracer.make({
    span(name, parent, context, links, startTime, kind) {
      let traceId = Option.isSome(parent) ? parent.value.traceId : undefined
      if (sample !== undefined && !sample(parent, () => traceId ??= randomHex(16))) {
        return new UnsampledSpan(name, parent, context, links, startTime, kind, traceId ?? randomHex(16))
      }
      return new ExportedSpan(name, parent, context, links, startTime, kind, traceId ?? randomHex(16), push)
    },
    context: (f) => f()
  })
}
