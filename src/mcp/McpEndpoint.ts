import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Fiber, Layer, Mailbox, Stream } from "effect"
import { AgentsLive } from "../agents/AgentsLive.js"
import { AuditLog } from "../audit/AuditLog.js"
import { CommandPolicies } from "../commands/CommandPolicies.js"
import { acceptsEventStream, eventStreamResponse } from "../events/EventStreamResponse.js"
import { InvokeStream } from "../events/InvokeStream.js"
import { Files } from "../files/Files.js"
import { Workspace } from "../files/Workspace.js"
import { FunctionsLive } from "../functions/FunctionsLive.js"
import { Drain } from "../http/Drain.js"
import { isJsonMediaType, unsupportedMediaType } from "../http/JsonBody.js"
import { RouteTable } from "../http/RouteTable.js"
import { KnowledgeLive } from "../knowledge/KnowledgeLive.js"
import { OAuthLive } from "../oauth/OAuthLive.js"
import type { ProtectedResource } from "../oauth/Resources.js"
import { SchedulesLive } from "../schedules/SchedulesLive.js"
import { UsageLive } from "../usage/UsageLive.js"
import { McpAdmission } from "./McpAdmission.js"
import { type Answer, bodyJson, httpError } from "./McpAnswer.js"
import { McpFastPathLive } from "./McpFastPath.js"
import { McpProtocol } from "./McpProtocol.js"
import { McpSessions } from "./McpSessions.js"

const GET_STREAM_MAX_MS = 5 * 60_000

const toResponse = (answer: Answer) =>
  Effect.gen(function*() {
    switch (answer._tag) {
      case "Json":
        return HttpServerResponse.text(bodyJson(answer.body), {
          status: answer.status,
          headers: answer.headers,
          contentType: "application/json"
        })
      case "Empty":
        return HttpServerResponse.empty({ status: answer.status })
      case "Events": {
        const mailbox = yield* Mailbox.make<string>()
        const fiber = yield* answer.run((event) => mailbox.offer(event).pipe(Effect.asVoid)).pipe(
          Effect.ensuring(mailbox.end),
          Effect.forkDaemon
        )
        // a client that goes away stops the call, as on the fast path (not a cancellation: a task runs on)
        const events = Mailbox.toStream(mailbox).pipe(Stream.ensuring(Fiber.interrupt(fiber)))
        return HttpServerResponse.stream(Stream.encodeText(events), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache" }
        })
      }
    }
  })

/**
 * The MCP endpoint's routes (Streamable HTTP, spec 4.8) over the protocol services (McpAdmission.ts,
 * McpProtocol.ts): POST a
 * message, GET the server-to-client stream, DELETE the session, at every protected resource's path.
 */
const McpRouteTable = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const routes = yield* RouteTable
    const protocol = yield* McpProtocol
    const admission = yield* McpAdmission
    const drain = yield* Drain
    const sessions = yield* McpSessions
    const asCalled = (called: ProtectedResource, url: string) => admission.resourceAt(url) ?? called

    const post = (called: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const resource = asCalled(called, request.url)
        const caller = yield* admission.admit(resource, request.headers)
        if (!isJsonMediaType(request.headers["content-type"])) {
          const { code, message } = unsupportedMediaType(request.headers["content-type"])
          return httpError(415, code, message)
        }
        const text = yield* request.text.pipe(Effect.orDie)
        return yield* protocol.handleMessage(resource, caller, text, request.headers, false)
      }).pipe(Effect.merge, Effect.flatMap(toResponse))

    /** The server-to-client stream: we send nothing unprompted yet, so it carries keep-alives until it ends. */
    const get = (called: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const caller = yield* admission.admit(asCalled(called, request.url), request.headers)
        const { id } = yield* admission.session(caller, request.headers)
        if (!acceptsEventStream(request.headers["accept"])) {
          return yield* toResponse(
            httpError(406, "not_acceptable", "GET opens an event stream: send Accept: text/event-stream.")
          )
        }
        // heartbeats from the node's one timer for all streams (a tick a second per stream was a fiber woken
        // every second for every idle client); ends at a drain too, so a stopping node is not held open by
        // idle streams (clients reconnect), after GET_STREAM_MAX_MS, and with its session (a DELETE)
        return eventStreamResponse(
          drain,
          Stream.concat(Stream.make(": stream open\n\n"), Stream.drain(Stream.fromEffect(sessions.ended(caller, id))))
            .pipe(Stream.interruptAfter(GET_STREAM_MAX_MS))
        )
      }).pipe(Effect.catchAll(toResponse))

    const del = (called: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const caller = yield* admission.admit(asCalled(called, request.url), request.headers)
        const { id } = yield* admission.session(caller, request.headers)
        yield* admission.endSession(id)
        // its calls in flight here stop (on other nodes they run to their end; their answers reach nobody)
        yield* protocol.cancelSession(id)
        return { _tag: "Empty", status: 204 } satisfies Answer
      }).pipe(Effect.merge, Effect.flatMap(toResponse))

    for (const resource of admission.resources) {
      const path = resource.path as `/${string}`
      yield* router.add("POST", path, post(resource))
      yield* router.add("GET", path, get(resource))
      yield* router.add("DELETE", path, del(resource))
      for (const method of ["POST", "GET", "DELETE"]) routes.add(method, new RegExp(`^${path.replace(/\/$/, "")}/?$`))
    }
  })
)

/** The MCP endpoint: its routes, and its plain-Node fast path, over one admission and one protocol service. */
export const McpRoutes = Layer.mergeAll(McpRouteTable, McpFastPathLive).pipe(
  Layer.provide(McpProtocol.Default),
  Layer.provide(Workspace.DefaultWithoutDependencies.pipe(Layer.provideMerge(Files.Default))),
  Layer.provideMerge(McpAdmission.Default),
  Layer.provide(McpSessions.DefaultWithoutDependencies),
  Layer.provide(OAuthLive),
  Layer.provide(SchedulesLive),
  Layer.provide(FunctionsLive),
  Layer.provide(KnowledgeLive),
  Layer.provide(UsageLive),
  Layer.provide(CommandPolicies.Default),
  Layer.provide(InvokeStream.Default),
  Layer.provide(AgentsLive),
  Layer.provide(AuditLog.Default)
)
