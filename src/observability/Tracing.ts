import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient } from "@effect/platform"
import { Duration, Effect, Layer, Logger, Option } from "effect"
import * as Fs from "node:fs"
import { SwitchyardConfig, type SwitchyardSettings } from "../config/SwitchyardConfig.js"
import { nodeLogger } from "../http/AccessLog.js"
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

/** OTEL_EXPORTER_OTLP_HEADERS: `k1=v1,k2=v2`, values percent-encoded (W3C baggage style). */
export const otlpHeaders = (text: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=")
    if (eq <= 0) continue
    try {
      headers[pair.slice(0, eq).trim().toLowerCase()] = decodeURIComponent(pair.slice(eq + 1).trim())
    } catch {
      headers[pair.slice(0, eq).trim().toLowerCase()] = pair.slice(eq + 1).trim()
    }
  }
  return headers
}

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
    OtlpTracer.layer({
      url,
      resource: { serviceName: t.serviceName, serviceVersion: VERSION },
      headers: otlpHeaders(t.headers),
      exportInterval: Duration.millis(t.exportDelayMs)
    }).pipe(
      Layer.provide(t.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(FetchHttpClient.layer)
    ),
    Logger.replace(nodeLogger, tracedNodeLogger)
  )
}))
