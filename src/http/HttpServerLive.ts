import { Etag, HttpApiScalar, HttpLayerRouter, HttpMiddleware } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { Api } from "../../schema/Api.js"
import { GroupsHttpLive } from "../access/GroupsHttp.js"
import { AgentsHttpLive } from "../agents/AgentsHttp.js"
import { AuditHttpLive } from "../audit/AuditHttp.js"
import { DeniedRequestsLive } from "../audit/DeniedRequests.js"
import { CommandsHttpLive } from "../commands/CommandsHttp.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectionOAuthRoutes } from "../connectors/ConnectionOAuthRoutes.js"
import { ToolsHttpLive } from "../connectors/ToolsHttp.js"
import { EventsHttpLive } from "../events/EventsHttp.js"
import { FilesHttpLive } from "../files/FilesHttp.js"
import { FunctionsHttpLive } from "../functions/FunctionsHttp.js"
import { IdentityHttpLive } from "../identity/IdentityHttp.js"
import { KnowledgeHttpLive } from "../knowledge/KnowledgeHttp.js"
import { McpRoutes } from "../mcp/McpEndpoint.js"
import { SystemHttpLive } from "../node/SystemHttp.js"
import { OAuthHttpLive } from "../oauth/OAuthHttp.js"
import { OAuthRoutes } from "../oauth/OAuthRoutes.js"
import { tracesUrl } from "../observability/Tracing.js"
import { SchedulesHttpLive } from "../schedules/SchedulesHttp.js"
import { ApprovalsHttpLive, SkillsHttpLive } from "../skills/SkillsHttp.js"
import { SsoHttpLive } from "../sso/SsoHttp.js"
import { UsageHttpLive } from "../usage/UsageHttp.js"
import { ConsoleRoutes } from "../web/ConsoleRoutes.js"
import { SignInPages } from "../web/SignInPages.js"
import { WebhooksHttpLive } from "../webhooks/WebhooksHttp.js"
import { AuthenticationLive } from "./AuthenticationLive.js"
import { Drain } from "./Drain.js"
import { errorEnvelope, OWN_ERROR_HEADER } from "./ErrorEnvelope.js"
import { FastInvokeLive } from "./FastInvoke.js"
import { FastTasksLive } from "./FastTasks.js"
import { gateRequests, NodeRequestGate } from "./NodeRequestGate.js"
import { requestIdOf, RequestPipelineLive } from "./RequestPipeline.js"
import { MAX_PATH_SEGMENT } from "./RouteTable.js"

const ApiRoutes = HttpLayerRouter.addHttpApi(Api, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([
    SystemHttpLive,
    IdentityHttpLive,
    ToolsHttpLive,
    AgentsHttpLive,
    GroupsHttpLive,
    SkillsHttpLive,
    ApprovalsHttpLive,
    AuditHttpLive,
    OAuthHttpLive,
    SsoHttpLive,
    SchedulesHttpLive,
    EventsHttpLive,
    WebhooksHttpLive,
    FilesHttpLive,
    FunctionsHttpLive,
    KnowledgeHttpLive,
    UsageHttpLive,
    CommandsHttpLive
  ]),
  Layer.provide(AuthenticationLive)
)

const Routes = Layer.mergeAll(
  ApiRoutes,
  HttpApiScalar.layerHttpLayerRouter({ api: Api, path: "/docs" }),
  ConnectionOAuthRoutes,
  OAuthRoutes,
  SignInPages,
  ConsoleRoutes,
  McpRoutes,
  FastInvokeLive,
  FastTasksLive,
  // added after the pipeline, so it runs inside it (request id and error bodies in place)
  DeniedRequestsLive
).pipe(Layer.provideMerge(RequestPipelineLive))

interface Unparsable {
  readonly status: number
  readonly reason: string
  readonly code: string
  readonly message: string
}

const UNPARSABLE: Record<string, Unparsable> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: "Request Header Fields Too Large",
    code: "headers_too_large",
    message: "The request line and headers are larger than this server reads (16 KiB): shorten the URL or the headers."
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: "Request Timeout",
    code: "request_timeout",
    message: "The request was not received in time."
  }
}
const NOT_HTTP: Unparsable = {
  status: 400,
  reason: "Bad Request",
  code: "bad_request",
  message: "The request is not valid HTTP/1.1."
}

/**
 * A request Node's parser refuses before any handler sees it (a URL or headers over its limit, bytes that are
 * not HTTP) is answered in the one error shape, as Node would answer it but with a body; a connection already
 * gone is only closed.
 */
const answerUnparsable = (server: Http.Server) =>
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
    const { code, message, reason, status } = UNPARSABLE[error.code ?? ""] ?? NOT_HTTP
    const requestId = requestIdOf(undefined)
    const body = JSON.stringify(errorEnvelope({ code, message }, requestId))
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\n` +
        `x-switchyard-error: ${OWN_ERROR_HEADER["x-switchyard-error"]}\r\nconnection: close\r\n\r\n${body}`
    )
  })

/**
 * Connections that have sent nothing yet. Node counts such a connection as busy (its headers timeout runs), so
 * closeIdleConnections leaves it and server.close waits for it: a client's spare connection (a browser's
 * preconnect, the one undici opens after fetches it aborted) held a stopping node for its whole grace. The
 * answer closes those open for `ms` with nothing read (a request sent with the connect has arrived by then).
 */
const silentConnections = (server: Http.Server) => {
  const opened = new Map<Net.Socket, number>()
  server.on("connection", (socket: Net.Socket) => {
    opened.set(socket, performance.now())
    socket.once("close", () => opened.delete(socket))
  })
  return (ms: number) => {
    const now = performance.now()
    for (const [socket, at] of opened) {
      // one that sent a request is Node's to close when idle
      if (socket.bytesRead > 0) opened.delete(socket)
      else if (now - at >= ms) socket.destroy()
    }
  }
}
// a connection's first bytes follow its connect by a round trip at most
const SILENT_MS = 1_000

/**
 * The HTTP front end. On shutdown, before the server and the cluster go down: turn unready, stop
 * accepting, and let requests in flight finish (up to SWITCHYARD_SHUTDOWN_GRACE).
 */
export const HttpServerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const server = Http.createServer()
    answerUnparsable(server)
    const closeSilent = silentConnections(server)
    server.keepAliveTimeout = 65_000 // longer than common load-balancer idle timeouts
    const gate = gateRequests(server)
    const served = HttpLayerRouter.serve(Layer.provide(Routes, Layer.succeed(NodeRequestGate, gate)), {
      disableLogger: true,
      disableListenLog: true,
      // the router's default (100) turned a long id into "no such route"; ids are checked by their schemas
      routerConfig: { maxParamLength: MAX_PATH_SEGMENT }
    }).pipe(
      // no tracer exports spans here (unless OTLP is configured: src/observability): skip building one per request
      Layer.locally(
        HttpMiddleware.currentTracerDisabledWhen,
        tracesUrl(config) === undefined ? () => true : () => false
      ),
      Layer.provide(NodeHttpServer.layer(() => server, { port: config.httpPort, host: config.host })),
      Layer.provide(Etag.layerWeak)
    )
    const drainOnShutdown = Layer.scopedDiscard(
      Effect.gen(function*() {
        const drain = yield* Drain
        yield* Effect.addFinalizer(() =>
          Effect.gen(function*() {
            yield* drain.begin
            yield* Effect.logInfo(`draining ${drain.inFlight()} request(s) in flight`)
            // keep serving until every connection is gone: a request on an open keep-alive connection is
            // answered normally, with `Connection: close`, instead of finding the application gone
            const closed = Effect.async<void>((resume) => {
              const sweep = setInterval(() => {
                server.closeIdleConnections()
                closeSilent(SILENT_MS)
              }, 50)
              server.close(() => {
                clearInterval(sweep)
                resume(Effect.void)
              })
              server.closeIdleConnections()
              return Effect.sync(() => clearInterval(sweep))
            })
            // then what must finish while the node still holds its shards (tool calls under way), in the same grace
            yield* closed.pipe(
              Effect.zipRight(drain.idle),
              Effect.zipRight(drain.stopping),
              // a finalizer runs uninterruptibly: without this the timeout could not cut the wait short
              Effect.interruptible,
              Effect.timeout(config.shutdownGrace),
              Effect.ignore
            )
            // past the grace, what is still open is cut: the server's own close would wait for it unbounded
            yield* Effect.sync(() => server.closeAllConnections())
          })
        )
      })
    )
    return Layer.provide(drainOnShutdown, served)
  })
)
