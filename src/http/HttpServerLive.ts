import { Etag, HttpApiScalar, HttpLayerRouter, HttpMiddleware } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import { Api } from "../../schema/Api.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { AgentsHttpLive } from "./AgentsHttp.js"
import { AuthenticationLive } from "./AuthenticationLive.js"
import { ConnectionOAuthRoutes } from "./ConnectionOAuthRoutes.js"
import { Drain } from "./Drain.js"
import { IdentityHttpLive } from "./IdentityHttp.js"
import { RequestPipelineLive } from "./RequestPipeline.js"
import { SystemHttpLive } from "./SystemHttp.js"
import { ToolsHttpLive } from "./ToolsHttp.js"

const ApiRoutes = HttpLayerRouter.addHttpApi(Api, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([SystemHttpLive, IdentityHttpLive, ToolsHttpLive, AgentsHttpLive]),
  Layer.provide(AuthenticationLive)
)

const Routes = Layer.mergeAll(
  ApiRoutes,
  HttpApiScalar.layerHttpLayerRouter({ api: Api, path: "/docs" }),
  ConnectionOAuthRoutes,
  RequestPipelineLive
)

/**
 * The HTTP front end. On shutdown, before the server and the cluster go down: turn unready, stop
 * accepting, and let requests in flight finish (up to SWITCHYARD_SHUTDOWN_GRACE).
 */
export const HttpServerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const server = Http.createServer()
    server.keepAliveTimeout = 65_000 // longer than common load-balancer idle timeouts
    // the server listens before the routes are attached (layer order): a request arriving in between
    // would wait forever, so until then it gets a 503 to retry
    let attached = false
    server.on("request", (_req, res) => {
      if (attached) return
      res.writeHead(503, { "content-type": "application/json", "retry-after": "1", "x-switchyard-error": "true" })
      res.end(JSON.stringify({ error: { code: "unavailable", message: "This node is starting; retry shortly." } }))
    })
    const served = HttpLayerRouter.serve(Routes, { disableLogger: true, disableListenLog: true }).pipe(
      // no tracer exports spans here: skip building one per request
      Layer.locally(HttpMiddleware.currentTracerDisabledWhen, () => true),
      Layer.provide(NodeHttpServer.layer(() => server, { port: config.httpPort, host: config.host })),
      Layer.provide(Etag.layerWeak)
    )
    const drainOnShutdown = Layer.scopedDiscard(
      Effect.gen(function*() {
        const drain = yield* Drain
        attached = true
        yield* Effect.addFinalizer(() =>
          Effect.gen(function*() {
            yield* drain.begin
            server.close()
            server.closeIdleConnections()
            yield* Effect.logInfo(`draining ${drain.inFlight} request(s) in flight`)
            yield* drain.idle.pipe(Effect.timeout(config.shutdownGrace), Effect.ignore)
          })
        )
      })
    )
    return Layer.provide(drainOnShutdown, served)
  })
)
