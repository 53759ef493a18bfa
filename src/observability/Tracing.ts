import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient } from "@effect/platform"
import { Duration, Effect, type Exit, Layer, Logger, Option, Tracer } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { SwitchyardConfig, type SwitchyardSettings } from "../config/SwitchyardConfig.js"
import { nodeLogger } from "../http/AccessLog.js"
import { layerProtobuf } from "./OtlpProtobuf.js"
import { tracedNodeLogger } from "./TraceLogger.js"

const VERSION: string = JSON.parse(Fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version

/**
 * Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT with the signal's
 * path (`/v1/traces`), as the OpenTelemetry specification reads them; undefined when neither is set or
 * OTEL_SDK_DISABLED is true: tracing off.
 */
export const tracesUrl = (settings: SwitchyardSettings): string | undefined => {
  const t = settings.tracing
  if (t.disabled) return undefined
  if (Option.isSome(t.tracesEndpoint)) return t.tracesEndpoint.value.trim()
  if (Option.isSome(t.endpoint)) return t.endpoint.value.trim().replace(/\/+$/, "") + "/v1/traces"
  return undefined
}

/** `k1=v1,k2=v2` with values percent-encoded (W3C baggage style), as OTEL_EXPORTER_OTLP_HEADERS and
 * OTEL_RESOURCE_ATTRIBUTES are written. */
const keyValues = (text: string, key: (k: string) => string): Record<string, string> => {
  const pairs: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=")
    if (eq <= 0) continue
    try {
      pairs[key(pair.slice(0, eq).trim())] = decodeURIComponent(pair.slice(eq + 1).trim())
    } catch {
      pairs[key(pair.slice(0, eq).trim())] = pair.slice(eq + 1).trim()
    }
  }
  return pairs
}

export const otlpHeaders = (text: string) => keyValues(text, (k) => k.toLowerCase())

/**
 * The resource's attributes: OTEL_RESOURCE_ATTRIBUTES, and a `service.instance.id` of this process unless given
 * there, so the spans of one trace tell which node made each.
 */
export const resourceAttributes = (text: string): Record<string, string> => ({
  "service.instance.id": Crypto.randomUUID(),
  ...keyValues(text, (k) => k)
})

type Sampler = SwitchyardSettings["tracing"]["sampler"]

/**
 * Whether a new span is recorded, by OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the OpenTelemetry
 * specification defines them: a ratio sampler keeps a trace by its id; a parent-based one follows the parent
 * span, local or remote (a `traceparent`, a cluster message), so a trace is kept or dropped whole.
 */
export const samplerOf = (sampler: Sampler, ratio: number) => {
  // the trace id's last 14 hex digits as a fraction of 16^14, as OpenTelemetry's TraceIdRatioBased does
  const byRatio = (traceId: () => string) => parseInt(traceId().slice(-14), 16) / 0x100000000000000 < ratio
  const root = sampler.endsWith("always_on")
    ? () => true
    : sampler.endsWith("always_off")
    ? () => false
    : byRatio
  // the trace id is asked for only by a ratio: the other samplers decide without drawing one
  return sampler.startsWith("parentbased_")
    ? (parent: Option.Option<Tracer.AnySpan>, traceId: () => string) =>
      Option.isSome(parent) ? parent.value.sampled : root(traceId)
    : (_: Option.Option<Tracer.AnySpan>, traceId: () => string) => root(traceId)
}

/** Random hex ids from a pooled buffer: one call into the CSPRNG per 4 KiB of ids, not one per span. */
const pool = Buffer.alloc(4096)
let pooled = pool.length
const randomHex = (bytes: number) => {
  if (pooled + bytes > pool.length) {
    Crypto.randomFillSync(pool)
    pooled = 0
  }
  pooled += bytes
  return pool.toString("hex", pooled - bytes, pooled)
}

/** A span not sampled: kept in memory for its children's decisions and ids, never exported. */
class UnsampledSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = false
  readonly spanId = randomHex(8)
  readonly attributes = new Map<string, unknown>()
  readonly links: Array<Tracer.SpanLink>
  status: Tracer.SpanStatus
  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Tracer.Span["context"],
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    readonly traceId: string
  ) {
    this.links = Array.from(links)
    this.status = { _tag: "Started", startTime }
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>) {
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(key: string, value: unknown) {
    this.attributes.set(key, value)
  }
  event() {}
  addLinks(links: ReadonlyArray<Tracer.SpanLink>) {
    this.links.push(...links)
  }
}

/** The exporting tracer behind a sampler: spans it does not sample cost a small object, and no export. */
const sampled = (exporting: Tracer.Tracer, sample: ReturnType<typeof samplerOf>): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      let drawn: string | undefined
      const traceId = () => Option.isSome(parent) ? parent.value.traceId : (drawn ??= randomHex(16))
      return sample(parent, traceId)
        ? exporting.span(name, parent, context, links, startTime, kind, options)
        : new UnsampledSpan(name, parent, context, links, startTime, kind, traceId())
    },
    context: (f, fiber) => exporting.context(f, fiber)
  })

/**
 * OpenTelemetry traces over OTLP/HTTP (JSON or protobuf by OTEL_EXPORTER_OTLP_PROTOCOL), through
 * @effect/opentelemetry's OtlpTracer: every Effect span of the node (the HTTP request, Effect.fn service
 * methods, SQL statements, cluster messages, task runs, model and connector calls) is exported in batches every
 * OTEL_BSP_SCHEDULE_DELAY ms. With tracing off this layer is empty: Effect keeps its in-memory spans, nothing
 * is exported, and the HTTP server builds no request span (HttpServerLive).
 */
export const TracingLive: Layer.Layer<never, never, SwitchyardConfig> = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* SwitchyardConfig
  const url = tracesUrl(config)
  if (url === undefined) return Layer.empty
  const t = config.tracing
  return Layer.merge<never, never, never, never, never, never>(
    Layer.unwrapScoped(Effect.map(
      OtlpTracer.make({
        url,
        resource: {
          serviceName: t.serviceName,
          serviceVersion: VERSION,
          attributes: resourceAttributes(t.resourceAttributes)
        },
        headers: otlpHeaders(t.headers),
        exportInterval: Duration.millis(t.exportDelayMs)
      }),
      (exporting) =>
        Layer.setTracer(
          t.sampler === "always_on"
            ? exporting
            : sampled(exporting, samplerOf(t.sampler, t.samplerRatio))
        )
    )).pipe(
      Layer.provide(t.protocol === "http/json" ? OtlpSerialization.layerJson : layerProtobuf),
      Layer.provide(FetchHttpClient.layer)
    ),
    Logger.replace(nodeLogger, tracedNodeLogger)
  )
}))
