import * as ShardId from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { ServeError } from "@effect/platform/HttpServerError"
import { Effect, Layer, Option } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Prom from "prom-client"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { PgPool } from "../db/PgPool.js"
import { NodeMetrics } from "./NodeMetrics.js"

/**
 * The runtime gauges, read at scrape time from prom-client's registry: the process and Node's own (CPU, memory,
 * GC, event-loop lag from `perf_hooks.monitorEventLoopDelay`, as `nodejs_eventloop_lag_*`), the database pool
 * and the shards this node owns. Nothing here runs per request.
 */
const runtimeRegistry = Effect.gen(function*() {
  const pool = yield* PgPool
  const sharding = yield* Sharding.Sharding
  const shardingConfig = yield* ShardingConfig.ShardingConfig
  const registry = new Prom.Registry()
  Prom.collectDefaultMetrics({ register: registry })
  new Prom.Gauge({
    name: "switchyard_db_pool_connections",
    help: "Connections of the node's PostgreSQL pool, by state (total open, idle).",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      this.set({ state: "total" }, pool.totalCount)
      this.set({ state: "idle" }, pool.idleCount)
    }
  })
  new Prom.Gauge({
    name: "switchyard_db_pool_waiting",
    help: "Queries waiting for a connection of the node's PostgreSQL pool.",
    registers: [registry],
    collect() {
      this.set(pool.waitingCount)
    }
  })
  new Prom.Gauge({
    name: "switchyard_shards_owned",
    help: "Cluster shards this node owns now.",
    registers: [registry],
    collect() {
      let owned = 0
      for (const group of shardingConfig.availableShardGroups) {
        for (let n = 1; n <= shardingConfig.shardsPerGroup; n++) {
          if (sharding.hasShardId(ShardId.make(group, n))) owned++
        }
      }
      this.set(owned)
    }
  })
  return registry
})

/**
 * `GET /metrics` in the Prometheus text format on SWITCHYARD_METRICS_PORT (SWITCHYARD_METRICS_HOST, else the
 * API's host): its own listener, so the API's port never exposes it and a scrape never waits behind API
 * traffic. Off (no listener, no gauges) when the port is unset.
 */
export const MetricsEndpointLive = Layer.scopedDiscard(Effect.gen(function*() {
  const config = yield* SwitchyardConfig
  const metrics = yield* NodeMetrics
  const write = metrics.write
  const port = Option.getOrUndefined(config.metrics.port)
  if (port === undefined || write === undefined) return
  const registry = yield* runtimeRegistry
  const scrape = async () => {
    const lines: Array<string> = []
    write(lines)
    return lines.join("\n") + "\n\n" + await registry.metrics()
  }
  const server = Http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0]
    if (path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("Only /metrics is served here.\n")
      return
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain" }).end()
      return
    }
    scrape().then(
      (text) => res.writeHead(200, { "content-type": Prom.Registry.PROMETHEUS_CONTENT_TYPE }).end(text),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable\n")
    )
  })
  const host = Option.getOrElse(config.metrics.host, () => config.host)
  yield* Effect.acquireRelease(
    // a port that is taken is a start-up failure told in one line (src/cli.ts), as the API's own port is
    Effect.async<void, ServeError>((resume) => {
      server.once("error", (cause) => resume(Effect.fail(new ServeError({ cause }))))
      server.listen(port, host, () => resume(Effect.void))
    }),
    () =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
  yield* Effect.logInfo(`metrics on http://${host}:${(server.address() as AddressInfo).port}/metrics`)
}))
