import { NodeHttpClient } from "@effect/platform-node"
import { Effect, Layer, Logger, Option, type Tracer } from "effect"
import * as Crypto from "node:crypto"
import { SwitchyardConfig, type SwitchyardSettings } from "../config/SwitchyardConfig.js"
import { nodeLogger } from "../http/AccessLog.js"
import { VERSION } from "../support/Version.js"
import { makeExportingTracer, makeSpanExporter } from "./SpanExporter.js"
import { type LeanSpans, leanSpans, type TraceId } from "./Spans.js"
import { tracedNodeLogger } from "./TraceLogger.js"

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

/** The tracer's lean spans (Spans.ts) while spans are exported; undefined with tracing off. */
export const leanSpansWhenTracing: Effect.Effect<LeanSpans | undefined, never, SwitchyardConfig> = Effect.gen(
  function*() {
    const config = yield* SwitchyardConfig
    return tracesUrl(config) === undefined ? undefined : leanSpans(yield* Effect.tracer, yield* Effect.clock)
  }
)

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
  // the trace id's last 14 hex digits (its low 56 bits) as a fraction of 16^14, as OpenTelemetry's
  // TraceIdRatioBased does: from the id's words, without its hex form
  const byRatio = (traceId: () => TraceId) => {
    const t = traceId()
    const low = t.exact ? (t.w2 & 0xffffff) * 0x100000000 + t.w3 : parseInt(t.hex.slice(-14), 16)
    return low / 0x100000000000000 < ratio
  }
  const root = sampler.endsWith("always_on")
    ? () => true
    : sampler.endsWith("always_off")
    ? () => false
    : byRatio
  // the trace id is asked for only by a ratio: the other samplers decide without drawing one
  return sampler.startsWith("parentbased_")
    ? (parent: Option.Option<Tracer.AnySpan>, traceId: () => TraceId) =>
      Option.isSome(parent) ? parent.value.sampled : root(traceId)
    : (_: Option.Option<Tracer.AnySpan>, traceId: () => TraceId) => root(traceId)
}

/**
 * OpenTelemetry traces over OTLP/HTTP (protobuf, or JSON by OTEL_EXPORTER_OTLP_PROTOCOL): every Effect span of
 * the node (the HTTP request, Effect.fn service methods, SQL statements, cluster messages, task runs, model and
 * connector calls) the sampler keeps is exported in batches every OTEL_BSP_SCHEDULE_DELAY ms by our own lean
 * exporter (SpanExporter.ts, Spans.ts, SpanEncoding.ts): @effect/opentelemetry's OtlpTracer built a tree of
 * attribute objects per span and walked it again to encode, most of what tracing cost a request. With tracing
 * off this layer is empty: Effect keeps its in-memory spans, nothing is exported, and the HTTP server builds no
 * request span (HttpServerLive).
 */
export const TracingLive: Layer.Layer<never, never, SwitchyardConfig> = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* SwitchyardConfig
  const url = tracesUrl(config)
  if (url === undefined) return Layer.empty
  const t = config.tracing
  const attributes = resourceAttributes(t.resourceAttributes)
  // OTEL_SERVICE_NAME, else a service.name in OTEL_RESOURCE_ATTRIBUTES, else "switchyard" (the config's default)
  const serviceName = t.serviceName === "switchyard" && attributes["service.name"] !== undefined
    ? attributes["service.name"]
    : t.serviceName
  const resource = {
    attributes: Object.entries({
      ...attributes,
      "service.name": serviceName,
      "service.version": attributes["service.version"] ?? VERSION
    }),
    scopeName: serviceName
  }
  const options = {
    url,
    protocol: t.protocol,
    headers: { "user-agent": `switchyard/${VERSION}`, ...otlpHeaders(t.headers) },
    resource,
    exportIntervalMs: t.exportDelayMs
  }
  const sample = t.sampler === "always_on" ? undefined : samplerOf(t.sampler, t.samplerRatio)
  return Layer.merge<never, never, never, never, never, never>(
    Layer.unwrapScoped(
      Effect.map(makeSpanExporter(options), (exporter) => Layer.setTracer(makeExportingTracer(exporter, sample)))
      // undici's own request, not fetch: fetch wraps each export's body in web streams and copies it
    ).pipe(Layer.provide(NodeHttpClient.layerUndici)),
    Logger.replace(nodeLogger, tracedNodeLogger)
  )
}))
