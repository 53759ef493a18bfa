import { HttpBody, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Option, type Scope, Tracer } from "effect"
import { ProtoWriter } from "./ProtoWriter.js"
import { batchFraming, encodeJson, type ExportResource, type FinishedSpan, writeSpan } from "./SpanEncoding.js"
import { ExportedSpan, TraceId, traceOf, UnsampledSpan } from "./Spans.js"

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
  /** Encoded bytes per export request (protobuf), likewise: a few spans with long statements fill a batch too. */
  readonly maxBatchBytes?: number
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
 * as soon as a full batch is queued, and once more when the scope closes (within the shutdown timeout). A
 * span's own request path only adds it to the open batch (encoded there, protobuf) and never waits on the
 * network. A failed export drops its spans: no retries holding the
 * queue, and failures and drops are logged at most once per interval, never raised into a request.
 */
export const makeSpanExporter = (
  options: SpanExporterOptions
): Effect.Effect<SpanExporter, never, HttpClient.HttpClient | Scope.Scope> =>
  Effect.gen(function*() {
    // an export request costs the node a fixed share of CPU beyond its bytes (the HTTP client's Effect
    // machinery, about half a millisecond in a node's profile): at thousands of spans a second, fewer and
    // larger requests; the queue holds a few batches, so one in flight does not make the next drop spans
    const maxBatchSize = options.maxBatchSize ?? 4096
    const maxQueueSize = options.maxQueueSize ?? 4 * maxBatchSize
    const maxBatchBytes = options.maxBatchBytes ?? 4 * 1024 * 1024
    const client = HttpClient.filterStatusOk(yield* HttpClient.HttpClient)
    const request = HttpClientRequest.post(options.url, { headers: options.headers })
    const stats = { exported: 0, dropped: 0, failed: 0, requests: 0 }
    const wake = yield* Effect.makeLatch(false)
    const pending = options.protocol === "http/json"
      ? jsonBatches(options.resource, maxQueueSize, maxBatchSize, () => wake.unsafeOpen())
      : protobufBatches(
        options.resource,
        maxQueueSize,
        maxBatchSize,
        maxBatchBytes,
        () => wake.unsafeOpen(),
        () => stats.dropped++
      )
    const push = (span: FinishedSpan) => {
      if (!pending.push(span)) stats.dropped++
    }

    let lastFailure: unknown = undefined
    const send = (batch: Batch) =>
      Effect.suspend(() => {
        stats.requests++
        return client.execute(HttpClientRequest.setBody(request, batch.body()))
      }).pipe(
        Effect.flatMap((response) => response.arrayBuffer),
        Effect.timeout(options.exportTimeoutMs ?? 10_000),
        Effect.matchCause({
          onSuccess: () => {
            stats.exported += batch.count
            batch.sent?.()
          },
          onFailure: (cause) => {
            stats.failed += batch.count
            lastFailure = cause
          }
        })
      )
    // `all`: the batch still open too (at the interval and at shutdown); else only the full ones
    const exportQueued = (all: boolean) =>
      Effect.suspend(() => Effect.forEach(pending.take(all), send, { discard: true }))

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
      exportQueued(true).pipe(
        Effect.timeoutOption(options.shutdownTimeoutMs ?? 3000),
        Effect.zipRight(report),
        Effect.withTracerEnabled(false)
      )
    )
    yield* Effect.gen(function*() {
      for (;;) {
        const woken = yield* Effect.timeoutOption(wake.await, options.exportIntervalMs)
        // closed before exporting: a batch filled meanwhile opens it again and is sent at once
        wake.unsafeClose()
        yield* exportQueued(Option.isNone(woken))
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

/** Spans encoded together into the open batch (protobufBatches). */
const ENCODE_EVERY = 64

/** Spans waiting for export, in batches of at most `maxBatchSize`, one request each. */
interface Batch {
  readonly count: number
  readonly body: () => HttpBody.HttpBody
  /** Its request was sent and answered: nothing reads the body any more. */
  readonly sent?: () => void
}
interface Batches {
  /** false when the queue is full: the span is dropped. */
  readonly push: (span: FinishedSpan) => boolean
  readonly take: (all: boolean) => Array<Batch>
}

/**
 * Protobuf batches: ended spans are encoded into the open batch ENCODE_EVERY at a time, so what waits for the
 * export is bytes, not span objects (held for seconds, those are what the garbage collector copies from
 * generation to generation), and the encoder runs in one loop over a few dozen spans rather than once between
 * every two steps of the requests: encoded one by one as they ended, a traced connector invoke (two spans) cost
 * the node 7–11 µs more CPU (of ~120) than encoded 64 at a time, though encoding a span takes ~1 µs. A span that
 * fails to encode is cut off and dropped (`lost`).
 */
const protobufBatches = (
  resource: ExportResource,
  maxQueueSize: number,
  maxBatchSize: number,
  maxBatchBytes: number,
  full: () => void,
  lost: () => void
): Batches => {
  const framing = batchFraming(resource)
  // a writer as large as the last full batch came to be (within bounds): it need not grow, and copy, as it fills;
  // and the writer of a batch sent is written again, so the batches' megabytes are not allocated (outside the
  // heap) over and over, each a share of the next full garbage collection
  let capacity = 64 * 1024
  const spare: Array<ProtoWriter> = []
  const writer = () => spare.pop()?.reuse(framing.headroom) ?? new ProtoWriter(capacity, framing.headroom)
  let open = writer()
  let count = 0
  let sealed: Array<Batch> = []
  let queued = 0
  const seal = (full: boolean) => {
    const bytes = framing.frame(open)
    const sent = open
    sealed.push({
      count,
      body: () => HttpBody.uint8Array(bytes, "application/x-protobuf"),
      sent: () => void (spare.length < 2 && spare.push(sent))
    })
    if (full) capacity = Math.min(Math.max(bytes.length + 4096, 64 * 1024), maxBatchBytes + 64 * 1024)
    open = writer()
    count = 0
  }
  const encode = (span: FinishedSpan) => {
    const at = open.length
    try {
      writeSpan(open, span)
    } catch {
      open.truncate(at)
      queued--
      lost()
      return
    }
    if (++count >= maxBatchSize || open.length - framing.headroom >= maxBatchBytes) {
      seal(true)
      full()
    }
  }
  // ended, not yet encoded: counted in `queued`
  let held: Array<FinishedSpan> = []
  const encodeHeld = () => {
    const spans = held
    held = []
    for (let i = 0; i < spans.length; i++) encode(spans[i]!)
  }
  return {
    push: (span) => {
      if (queued >= maxQueueSize) return false
      queued++
      held.push(span)
      // at once when they complete a batch, which is then sent without waiting for the interval
      if (held.length >= ENCODE_EVERY || count + held.length >= maxBatchSize) encodeHeld()
      return true
    },
    take: (all) => {
      if (all) encodeHeld()
      if (all && count > 0) seal(false)
      const batches = sealed
      sealed = []
      queued = count + held.length
      return batches
    }
  }
}

/** JSON batches (OTEL_EXPORTER_OTLP_PROTOCOL=http/json, for debugging and tests): spans kept until the export. */
const jsonBatches = (
  resource: ExportResource,
  maxQueueSize: number,
  maxBatchSize: number,
  full: () => void
): Batches => {
  let queue: Array<FinishedSpan> = []
  return {
    push: (span) => {
      if (queue.length >= maxQueueSize) return false
      queue.push(span)
      if (queue.length % maxBatchSize === 0) full()
      return true
    },
    take: (all) => {
      const taken = all ? queue.length : queue.length - queue.length % maxBatchSize
      const spans = queue.slice(0, taken)
      queue = queue.slice(taken)
      const batches: Array<Batch> = []
      for (let i = 0; i < spans.length; i += maxBatchSize) {
        const batch = spans.slice(i, i + maxBatchSize)
        batches.push({ count: batch.length, body: () => HttpBody.unsafeJson(encodeJson(resource, batch)) })
      }
      return batches
    }
  }
}

/**
 * The node's tracer: a sampled span is an ExportedSpan pushed to `exporter` when it ends; one the sampler
 * drops is an UnsampledSpan (ids for its children, nothing exported). No sampler: every span sampled.
 */
export const makeExportingTracer = (
  exporter: Pick<SpanExporter, "push">,
  sample?: (parent: Option.Option<Tracer.AnySpan>, traceId: () => TraceId) => boolean
): Tracer.Tracer => {
  const push = exporter.push
  return Tracer.make({
    span(name, parent, context, links, startTime, kind) {
      let trace: TraceId | undefined = traceOf(parent)
      if (sample !== undefined && !sample(parent, () => trace ??= TraceId.random())) {
        return new UnsampledSpan(name, parent, context, startTime, kind, trace ?? TraceId.random())
      }
      return new ExportedSpan(name, parent, context, links, startTime, kind, trace ?? TraceId.random(), push)
    },
    context: nativeContext
  })
}

/**
 * Effect's own tracer's `context`, the very function: the fiber run loop calls the tracer's `context` around every
 * step, and V8 inlines that call while the site has only ever seen one function. A second one there (ours, though
 * it does the same, after the node's first fibers ran with Effect's) leaves a real call per step.
 */
const nativeContext = Effect.runSync(Effect.map(Effect.tracer, (tracer) => tracer.context))
