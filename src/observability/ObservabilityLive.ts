import { Effect, Layer, Option } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { RouteTable } from "../http/RouteTable.js"
import { makeMetricRecorders, NodeMetrics } from "./NodeMetrics.js"
import { TracingLive } from "./Tracing.js"

/**
 * What the node's parts observe with: the metric recorders (when SWITCHYARD_METRICS_PORT is set) and the tracer
 * (when an OTLP endpoint is). Provided under everything else, so every layer built after it records and traces;
 * the scrape endpoint (MetricsEndpoint.ts) comes up later, once the database and the cluster are there to read.
 */
export const ObservabilityLive: Layer.Layer<never, never, SwitchyardConfig | RouteTable> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const routes = yield* RouteTable
    const metrics: Layer.Layer<never> = Option.isSome(config.metrics.port)
      ? Layer.succeed(NodeMetrics, makeMetricRecorders(routes.allowedMethods))
      : Layer.empty
    return Layer.merge(metrics, TracingLive)
  })
)
