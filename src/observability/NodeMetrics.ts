import { Context } from "effect"
import {
  CounterFamily,
  type CounterSeries,
  CountOf,
  HistogramFamily,
  type HistogramSeries,
  statusClassOf
} from "./MetricSeries.js"
import { makeRouteTemplates } from "./RouteTemplates.js"

/** Task run times: from a scripted run (milliseconds) to the default time limit (10 minutes). */
const TASK_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]

const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])

/** One model call as the gateway saw it. */
export interface ModelCallFacts {
  readonly provider: string
  readonly model: string
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cachedTokens: number
  readonly cost: number
  readonly seconds: number
  readonly ok: boolean
}

/**
 * What the node's parts record, each `undefined` while metrics are off (SWITCHYARD_METRICS_PORT unset), so a
 * caller pays one comparison: `metrics.request?.(…)`.
 */
export interface MetricRecorders {
  /** Every answered request, by both stacks (AccessLog.makeAccessLog): `started` is `performance.now()`. */
  readonly request: ((method: string | undefined, url: string, status: number, started: number) => void) | undefined
  /** A task reached its end (TaskRunner). */
  readonly taskEnded: ((status: string, seconds: number) => void) | undefined
  readonly modelCall: ((facts: ModelCallFacts) => void) | undefined
  /** A connector call ended (OperationCall): the target's status, or null when it never answered. */
  readonly connectorCall:
    | ((connector: { readonly id: string; readonly name: string }, status: number | null, ms: number) => void)
    | undefined
  /** The families, in the Prometheus text format. */
  readonly write: ((lines: Array<string>) => void) | undefined
}

const OFF: MetricRecorders = {
  request: undefined,
  taskEnded: undefined,
  modelCall: undefined,
  connectorCall: undefined,
  write: undefined
}

/** The node's metric recorders; off unless the node provides them (ObservabilityLive). */
export class NodeMetrics extends Context.Reference<NodeMetrics>()("observability/NodeMetrics", {
  defaultValue: () => OFF
}) {}

/** Series by status class: index 0 for "no answer", 1-5 for 1xx-5xx. */
type ByClass<S> = Array<S | undefined>
const classIndex = (status: number | null) =>
  status === null || status < 100 || status >= 600 ? 0 : Math.floor(status / 100)

/** The node's recorders; `allowedMethods` (its RouteTable's) names the routes outside the HttpApi. */
export const makeMetricRecorders = (allowedMethods: (path: string) => ReadonlyArray<string>): MetricRecorders => {
  const routeTemplateOf = makeRouteTemplates(allowedMethods)
  const requestDuration = new HistogramFamily(
    "switchyard_http_request_duration_seconds",
    "Time from a request's arrival to its response head, by method, route template and status class."
  )
  const requests = new CountOf(
    "switchyard_http_requests_total",
    "Requests answered, by method, route template and status class (both the HttpApi stack and the fast paths).",
    requestDuration
  )
  const byRoute = new Map<string, Map<string, ByClass<HistogramSeries>>>()
  const requestSeries = (route: string, method: string, status: number) => {
    let byMethod = byRoute.get(route)
    if (byMethod === undefined) byRoute.set(route, byMethod = new Map())
    let byClass = byMethod.get(method)
    if (byClass === undefined) byMethod.set(method, byClass = [])
    const i = classIndex(status)
    return byClass[i] ??= requestDuration.add({ method, route, status_class: statusClassOf(status) })
  }

  const taskDuration = new HistogramFamily(
    "switchyard_task_duration_seconds",
    "Task run time to its end on the node that ran it, by final status.",
    TASK_BUCKETS
  )
  const tasks = new CountOf("switchyard_tasks_finished_total", "Tasks ended, by final status.", taskDuration)
  const taskSeries = new Map<string, HistogramSeries>()

  const modelDuration = new HistogramFamily(
    "switchyard_model_call_duration_seconds",
    "Model calls (one attempt each), by provider, model and outcome.",
    TASK_BUCKETS
  )
  const modelCalls = new CountOf(
    "switchyard_model_calls_total",
    "Model calls, by provider, model and outcome.",
    modelDuration
  )
  const tokens = new CounterFamily(
    "switchyard_model_tokens_total",
    "Tokens reported by the model, by provider, model and type (input, output, cached)."
  )
  const cost = new CounterFamily("switchyard_model_cost_usd_total", "Model cost in US dollars, by provider and model.")
  const modelSeries = new Map<string, {
    readonly ok: HistogramSeries
    readonly failed: HistogramSeries
    readonly input: CounterSeries
    readonly output: CounterSeries
    readonly cached: CounterSeries
    readonly cost: CounterSeries
  }>()

  const connectorDuration = new HistogramFamily(
    "switchyard_connector_call_duration_seconds",
    "Connector calls, from the start to the target's response head (or the failure), by connector and status class."
  )
  const connectorCalls = new CountOf(
    "switchyard_connector_calls_total",
    "Connector calls, by connector and status class (`error`: no answer from the target).",
    connectorDuration
  )
  const byConnector = new Map<string, ByClass<HistogramSeries>>()

  const families = [
    requests,
    requestDuration,
    tasks,
    taskDuration,
    modelCalls,
    modelDuration,
    tokens,
    cost,
    connectorCalls,
    connectorDuration
  ]

  return {
    request: (method, url, status, started) => {
      const seconds = (performance.now() - started) / 1000
      const m = method !== undefined && METHODS.has(method) ? method : "OTHER"
      requestSeries(routeTemplateOf(url), m, status).observe(seconds)
    },
    taskEnded: (status, seconds) => {
      let series = taskSeries.get(status)
      if (series === undefined) taskSeries.set(status, series = taskDuration.add({ status }))
      series.observe(seconds)
    },
    modelCall: (facts) => {
      const key = `${facts.provider}\u0000${facts.model}`
      let series = modelSeries.get(key)
      if (series === undefined) {
        const labels = { provider: facts.provider, model: facts.model }
        modelSeries.set(
          key,
          series = {
            ok: modelDuration.add({ ...labels, outcome: "ok" }),
            failed: modelDuration.add({ ...labels, outcome: "error" }),
            input: tokens.add({ ...labels, type: "input" }),
            output: tokens.add({ ...labels, type: "output" }),
            cached: tokens.add({ ...labels, type: "cached" }),
            cost: cost.add(labels)
          }
        )
      }
      ;(facts.ok ? series.ok : series.failed).observe(facts.seconds)
      series.input.inc(facts.inputTokens)
      series.output.inc(facts.outputTokens)
      series.cached.inc(facts.cachedTokens)
      series.cost.inc(facts.cost)
    },
    connectorCall: (connector, status, ms) => {
      let byClass = byConnector.get(connector.id)
      if (byClass === undefined) byConnector.set(connector.id, byClass = [])
      const i = classIndex(status)
      const series = byClass[i] ??= connectorDuration.add({
        connector: connector.id,
        connector_name: connector.name,
        status_class: statusClassOf(status)
      })
      series.observe(ms / 1000)
    },
    write: (lines) => {
      for (const family of families) family.write(lines)
    }
  }
}
