import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Exit, FiberRef, Layer, Mailbox, ParseResult, Schedule, Stream } from "effect"
import * as Fs from "node:fs"
import { AgentsLive } from "../agents/AgentsLive.js"
import { AuditLog } from "../audit/AuditLog.js"
import { makeAskTool } from "../builtin/BuiltinAgent.js"
import { Drain } from "../http/Drain.js"
import { isJsonMediaType, unsupportedMediaType } from "../http/JsonBody.js"
import { CurrentRequest } from "../http/RequestContext.js"
import { extraRoutes } from "../http/RouteTable.js"
import { OAuthLive } from "../oauth/OAuthLive.js"
import { BUILTIN_MCP_PATH, oauthSettings, type ProtectedResource, SCOPES } from "../oauth/Resources.js"
import { type McpCaller, TokenVerifier } from "../oauth/TokenVerifier.js"
import { classify, ErrorCodes, failure, type JsonRpcId, type JsonRpcRequest, result } from "./JsonRpc.js"
import { installFastPath } from "./McpFastPath.js"
import { McpSessions } from "./McpSessions.js"
import { type ToolContext, type ToolFailure, type ToolServices, ToolText } from "./McpTool.js"
import { type LoadedTool, loadTools, registryOf } from "./ToolRegistry.js"

/** Newest first: what `initialize` answers a client asking for a version we do not speak. */
export const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18"] as const
const VERSION: string = JSON.parse(Fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version
const BEARER = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i
const GET_STREAM_MAX_MS = 5 * 60_000
const KEEPALIVE_EVERY_S = 15

/**
 * What a request is answered, before it becomes an HTTP response: the Effect route and the plain-Node fast
 * path (McpFastPath.ts) both write the same answers from it.
 */
export type Answer =
  | { readonly _tag: "Json"; readonly status: number; readonly body: unknown; readonly headers: Record<string, string> }
  | { readonly _tag: "Empty"; readonly status: number }
  /** An SSE stream: `run` sends events, then the stream ends. */
  | { readonly _tag: "Events"; readonly run: (send: (event: string) => Effect.Effect<void>) => Effect.Effect<void> }

const httpError = (status: number, code: string, message: string, headers: Record<string, string> = {}): Answer => ({
  _tag: "Json",
  status,
  body: { error: { code, message } },
  headers
})

const rpcResponse = (body: unknown, status = 200, headers: Record<string, string> = {}): Answer => ({
  _tag: "Json",
  status,
  body,
  headers
})

export const sse = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`

export const toolError = (error: ToolFailure) => ({
  content: [{ type: "text", text: JSON.stringify({ error }) }],
  structuredContent: { error },
  isError: true
})

export const asStructured = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value : { items: value }

/** A tool's encoded output as its `tools/call` result. */
export const toolResult = (encoded: unknown, text?: string) => {
  const json = JSON.stringify(encoded)
  return {
    content: [{ type: "text", text: text === undefined ? json : `${text}\n\n${json}` }],
    structuredContent: asStructured(encoded)
  }
}

/** A `tools/call` to run: the tool and its arguments (`{}` when the request sent none). */
export interface ToolCall {
  readonly loaded: LoadedTool
  readonly args: Record<string, unknown>
}

const kindOf = (value: unknown) => value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`

/** Arguments that do not match a tool's input schema, as the tool error a model reads. */
export const validationFailed = (error: ParseResult.ParseError) => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => ({
    path: i.path.map(String).join("."),
    message: i.message
  }))
  return toolError({
    code: "validation_failed",
    message: issues.map((i) => `${i.path === "" ? "arguments" : `\`${i.path}\``}: ${i.message}`).join("; "),
    details: { issues }
  })
}

const toResponse = (answer: Answer) =>
  Effect.gen(function*() {
    switch (answer._tag) {
      case "Json":
        return HttpServerResponse.unsafeJson(answer.body, { status: answer.status, headers: answer.headers })
      case "Empty":
        return HttpServerResponse.empty({ status: answer.status })
      case "Events": {
        const mailbox = yield* Mailbox.make<string>()
        yield* answer.run((event) => mailbox.offer(event).pipe(Effect.asVoid)).pipe(
          Effect.ensuring(mailbox.end),
          Effect.forkDaemon
        )
        return HttpServerResponse.stream(Stream.encodeText(Mailbox.toStream(mailbox)), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache" }
        })
      }
    }
  })

type Headers = Readonly<Record<string, string | undefined>>

/**
 * The MCP endpoint (spec 4.8): Streamable HTTP with a hand-rolled JSON-RPC dispatcher (building an SDK
 * server per request is several times slower, DESIGN §4), sessions in PostgreSQL, OAuth bearer tokens
 * bound to this endpoint's URL (spec 5.2). A POST whose token and session this node holds is answered
 * in plain Node (McpFastPath.ts) from the same code.
 */
export const McpRoutes = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const settings = yield* oauthSettings
    const verifier = yield* TokenVerifier
    const sessions = yield* McpSessions
    const drain = yield* Drain
    const registry = yield* loadTools
    const services = yield* Effect.context<ToolServices>()
    const audit = yield* AuditLog
    /** A refusal on the MCP endpoint is recorded like one on REST (ACCESS_DENIED), in its own transaction. */
    const denied = (caller: McpCaller, tool: string, reason: string) =>
      audit.record(caller.principal, {
        action: "ACCESS_DENIED",
        outcome: "denied",
        targets: [{ type: "mcp_tool", id: tool }],
        details: { reason, grant_id: caller.grantId }
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not record a refusal", cause)))
    const allowedOrigins = new Set(
      [settings.issuer, settings.appUrl, ...settings.resources.map((r) => r.resource)].map((u) => new URL(u).origin)
    )

    const challenge = (resource: ProtectedResource, extra = "") =>
      `Bearer resource_metadata="${resource.metadataUrl}", scope="${SCOPES.join(" ")}"${extra}`

    /** Who calls, from `Authorization: Bearer`; anything else is a 401 pointing at the resource metadata. */
    const authenticate = (resource: ProtectedResource, headers: Headers) =>
      Effect.gen(function*() {
        const header = headers["authorization"] ?? ""
        const match = BEARER.exec(header)
        if (match === null) {
          const apiKey = headers["x-api-key"] !== undefined
          return yield* Effect.fail(httpError(
            401,
            apiKey ? "api_key_not_accepted" : "missing_token",
            apiKey
              ? "The MCP endpoint does not accept x-api-key: sign in with OAuth and send Authorization: Bearer."
              : "Send an OAuth access token: Authorization: Bearer <token>. See the resource metadata to get one.",
            { "www-authenticate": challenge(resource) }
          ))
        }
        const caller = yield* verifier.verify(match[1]!, resource.resource).pipe(
          Effect.catchTag("SqlError", Effect.die),
          Effect.mapError((e) =>
            httpError(401, "invalid_token", e.message, {
              "www-authenticate": challenge(
                resource,
                `, error="invalid_token", error_description="${e.message.replace(/"/g, "'")}"`
              )
            })
          )
        )
        const info = yield* FiberRef.get(CurrentRequest)
        if (info !== undefined) info.organizationId = caller.principal.organizationId
        return caller
      })

    const originAllowed = (origin: string | undefined) => origin === undefined || allowedOrigins.has(origin)
    const versionSupported = (version: string | undefined) =>
      version === undefined || (PROTOCOL_VERSIONS as ReadonlyArray<string>).includes(version)

    /** Checks that apply to every method: Origin (DNS rebinding), token, protocol version. */
    const admit = (resource: ProtectedResource, headers: Headers) =>
      Effect.gen(function*() {
        const origin = headers["origin"]
        if (!originAllowed(origin)) {
          return yield* Effect.fail(
            httpError(403, "forbidden_origin", `Requests from the origin ${origin} are not accepted.`)
          )
        }
        const caller = yield* authenticate(resource, headers)
        const version = headers["mcp-protocol-version"]
        if (!versionSupported(version)) {
          return yield* Effect.fail(httpError(
            400,
            "unsupported_protocol_version",
            `MCP-Protocol-Version ${version} is not supported; use one of ${PROTOCOL_VERSIONS.join(", ")}.`
          ))
        }
        return caller
      })

    const session = (caller: McpCaller, headers: Headers) =>
      Effect.gen(function*() {
        const id = headers["mcp-session-id"]
        if (id === undefined) {
          return yield* Effect.fail(
            httpError(400, "session_required", "Send the Mcp-Session-Id that initialize returned.")
          )
        }
        const found = yield* sessions.find(caller, id).pipe(Effect.catchTag("SqlError", Effect.die))
        if (found === undefined) {
          return yield* Effect.fail(httpError(404, "session_not_found", "No such session: initialize a new one."))
        }
        return id
      })

    const mayCall = (caller: McpCaller, loaded: LoadedTool) =>
      loaded.tool.annotations.readOnlyHint
        ? caller.scopes.includes("mcp:read") || caller.scopes.includes("mcp:write")
        : caller.scopes.includes("mcp:write")

    /** One tool call: decode against the contract, run the service as the caller, encode to the wire form. */
    const runTool = (loaded: LoadedTool, args: unknown, context: ToolContext) =>
      Effect.gen(function*() {
        const input = yield* loaded.decode(args).pipe(Effect.either)
        if (input._tag === "Left") return validationFailed(input.left)
        const exit = yield* loaded.tool.run(input.right, context).pipe(Effect.provide(services), Effect.exit)
        if (Exit.isFailure(exit)) {
          const refused = Cause.failureOption(exit.cause)
          if (refused._tag === "Some" && refused.value.code === "forbidden") {
            yield* denied(context.caller, loaded.tool.name, refused.value.message)
          }
        }
        if (Exit.isSuccess(exit)) {
          const out = exit.value instanceof ToolText ? exit.value : undefined
          const encoded = yield* loaded.encode(out === undefined ? exit.value : out.value).pipe(Effect.orDie)
          return toolResult(encoded, out?.text)
        }
        const failed = Cause.failureOption(exit.cause)
        if (failed._tag === "Some") {
          const { code, details, message } = failed.value
          return toolError({ code, message, ...(details === undefined ? {} : { details }) })
        }
        yield* Effect.logError(`MCP tool ${loaded.tool.name} failed`, exit.cause)
        return toolError({ code: "internal_error", message: "The tool failed on our side; try again later." })
      })

    // the built-in agent's endpoint offers the agent itself; it reads through the read-only tools of /mcp/
    const readOnly = registry.list.filter((t) => t.annotations.readOnlyHint)
    const ask = yield* makeAskTool({
      specs: readOnly.map((t) => ({ name: t.name, description: t.description, parameters: t.inputSchema })),
      run: (name, args, context) => {
        const loaded = registry.byName.get(name)
        if (loaded === undefined || !loaded.tool.annotations.readOnlyHint) {
          return Effect.succeed({ isError: true, text: `error: there is no tool named ${name}` })
        }
        if (!mayCall(context.caller, loaded)) {
          return Effect.succeed({ isError: true, text: `error: your token does not allow ${name}` })
        }
        return Effect.map(
          runTool(loaded, args, { caller: context.caller, wantsProgress: false, progress: () => Effect.void }),
          (value) => ({ isError: "isError" in value, text: value.content[0]!.text })
        )
      }
    })
    const builtinRegistry = registryOf([ask])
    const registryFor = (resource: ProtectedResource) => resource.path === BUILTIN_MCP_PATH ? builtinRegistry : registry

    /**
     * The tool a `tools/call` names and its arguments, or the JSON-RPC / scope error that answers it instead.
     * Both ways a call arrives (this route and McpFastPath.ts) take their tool and arguments from here.
     */
    const toolFor = (
      resource: ProtectedResource,
      caller: McpCaller,
      message: JsonRpcRequest & { readonly id: JsonRpcId }
    ): ToolCall | Answer => {
      const params = message.params ?? {}
      const loaded = typeof params["name"] === "string" ? registryFor(resource).byName.get(params["name"]) : undefined
      if (loaded === undefined) {
        return rpcResponse(failure(message.id, ErrorCodes.invalidParams, `Unknown tool: ${String(params["name"])}`))
      }
      // MCP's `arguments` is an object, or absent (the tool runs without any). Anything else is a malformed
      // request, not a call with odd arguments: `Schema.Struct({})` would take `[1,2]` or `"str"` as no arguments.
      const args = params["arguments"] === undefined ? {} : params["arguments"]
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        const got = kindOf(args)
        const text = `\`arguments\` must be an object, not ${got}; omit it to call ${loaded.tool.name} without any.`
        return rpcResponse(failure(message.id, ErrorCodes.invalidParams, text))
      }
      if (!mayCall(caller, loaded)) {
        const needed = loaded.tool.annotations.readOnlyHint ? "mcp:read" : "mcp:write"
        return httpError(403, "insufficient_scope", `The tool ${loaded.tool.name} needs the scope ${needed}.`, {
          "www-authenticate": `Bearer error="insufficient_scope", scope="${
            [...new Set([...caller.scopes, needed])].join(" ")
          }", resource_metadata="${resource.metadataUrl}"`
        })
      }
      return { loaded, args: args as Record<string, unknown> }
    }

    /** The progress token of a call that wants an SSE answer with progress notifications, if any. */
    const progressTokenOf = (message: JsonRpcRequest, headers: Headers) => {
      const meta = message.params?.["_meta"] as Record<string, unknown> | undefined
      const token = meta?.["progressToken"]
      return (typeof token === "string" || typeof token === "number") &&
          (headers["accept"] ?? "").includes("text/event-stream")
        ? token
        : undefined
    }

    const toolsCall = (
      resource: ProtectedResource,
      caller: McpCaller,
      message: JsonRpcRequest & { readonly id: JsonRpcId },
      headers: Headers
    ) =>
      Effect.gen(function*() {
        const call = toolFor(resource, caller, message)
        if ("_tag" in call) {
          if (call._tag === "Json" && call.status === 403) {
            yield* denied(caller, String(message.params?.["name"]), "insufficient_scope")
          }
          return call
        }
        const { args, loaded } = call
        const token = progressTokenOf(message, headers)
        if (token === undefined) {
          const value = yield* runTool(loaded, args, { caller, wantsProgress: false, progress: () => Effect.void })
          return rpcResponse(result(message.id, value))
        }
        // an SSE answer: progress notifications while the tool runs, then its result
        return {
          _tag: "Events",
          run: (send) => {
            const progress = (n: number, text?: string) =>
              send(sse({
                jsonrpc: "2.0",
                method: "notifications/progress",
                params: { progressToken: token, progress: n, ...(text === undefined ? {} : { message: text }) }
              }))
            return runTool(loaded, args, { caller, wantsProgress: true, progress }).pipe(
              Effect.flatMap((value) => send(sse(result(message.id, value))))
            )
          }
        } satisfies Answer
      })

    /**
     * A POSTed message of an admitted caller with a JSON content type. `sessionChecked`: the fast path has
     * already found the caller's session.
     */
    const handleMessage = (
      resource: ProtectedResource,
      caller: McpCaller,
      text: string,
      headers: Headers,
      sessionChecked: boolean
    ) =>
      Effect.gen(function*() {
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          return rpcResponse(failure(null, ErrorCodes.parseError, "The body is not valid JSON."), 400)
        }
        const classified = classify(body)
        if (classified._tag === "Invalid") {
          return rpcResponse(failure(null, ErrorCodes.invalidRequest, classified.reason), 400)
        }
        if (classified._tag === "Request" && classified.message.method === "initialize") {
          const params = classified.message.params ?? {}
          const asked = params["protocolVersion"]
          const version = PROTOCOL_VERSIONS.find((v) => v === asked) ?? PROTOCOL_VERSIONS[0]
          const id = yield* sessions.open(caller, version, params["clientInfo"]).pipe(
            Effect.catchTag("SqlError", Effect.die)
          )
          return rpcResponse(
            result(classified.message.id, {
              protocolVersion: version,
              capabilities: { tools: { listChanged: false } },
              serverInfo: { name: resource.serverName, title: resource.serverName, version: VERSION },
              instructions: resource.path === BUILTIN_MCP_PATH
                ? "Switchyard's built-in agent: `ask` it about your organization (agents, tasks, connectors). " +
                  "It only reads, through tools that run as you, with your role's permissions."
                : "Switchyard's API as tools: agents, tasks (threads, usage) and connectors. " +
                  "Every tool runs as you, in your organization, with your role's permissions."
            }),
            200,
            { "mcp-session-id": id }
          )
        }
        if (!sessionChecked) yield* session(caller, headers)
        if (classified._tag !== "Request") return { _tag: "Empty", status: 202 } satisfies Answer
        const message = classified.message
        switch (message.method) {
          case "ping":
            return rpcResponse(result(message.id, {}))
          case "tools/list":
            return rpcResponse(result(message.id, { tools: registryFor(resource).list }))
          case "tools/call":
            return yield* toolsCall(resource, caller, message, headers)
          default:
            return rpcResponse(failure(message.id, ErrorCodes.methodNotFound, `Method not found: ${message.method}`))
        }
      }).pipe(Effect.merge)

    /**
     * The resource as called at its path without the trailing slash (`/mcp`): the same resource and tokens,
     * but challenged with the metadata address that names it `…/mcp`, which is what a client at that URL
     * accepts (Resources.ts).
     */
    const byPath = new Map(settings.resources.flatMap((r) => [
      [r.path, r] as const,
      [r.unslashed.path, { ...r, metadataUrl: r.unslashed.metadataUrl }] as const
    ]))
    const asCalled = (resource: ProtectedResource, url: string) => byPath.get(url.split("?")[0]!) ?? resource

    const post = (called: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const resource = asCalled(called, request.url)
        const caller = yield* admit(resource, request.headers)
        if (!isJsonMediaType(request.headers["content-type"])) {
          const { code, message } = unsupportedMediaType(request.headers["content-type"])
          return httpError(415, code, message)
        }
        const text = yield* request.text.pipe(Effect.orDie)
        return yield* handleMessage(resource, caller, text, request.headers, false)
      }).pipe(Effect.merge, Effect.flatMap(toResponse))

    /** The server-to-client stream: we send nothing unprompted yet, so it carries keep-alives until it ends. */
    const get = (called: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const caller = yield* admit(asCalled(called, request.url), request.headers)
        yield* session(caller, request.headers)
        if (!(request.headers["accept"] ?? "").includes("text/event-stream")) {
          return yield* toResponse(
            httpError(406, "not_acceptable", "GET opens an event stream: send Accept: text/event-stream.")
          )
        }
        const endAt = Date.now() + GET_STREAM_MAX_MS
        // ends at a drain too, so a stopping node is not held open by idle streams (clients reconnect)
        const ticks = Stream.fromSchedule(Schedule.spaced("1 second")).pipe(
          Stream.takeWhile(() => !drain.draining && Date.now() < endAt),
          Stream.filter((n) => n % KEEPALIVE_EVERY_S === KEEPALIVE_EVERY_S - 1),
          Stream.map(() => ": keep-alive\n\n")
        )
        return HttpServerResponse.stream(Stream.encodeText(Stream.concat(Stream.make(": stream open\n\n"), ticks)), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache" }
        })
      }).pipe(Effect.catchAll(toResponse))

    const del = (called: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const caller = yield* admit(asCalled(called, request.url), request.headers)
        const id = yield* session(caller, request.headers)
        yield* sessions.end(id).pipe(Effect.catchTag("SqlError", Effect.die))
        return { _tag: "Empty", status: 204 } satisfies Answer
      }).pipe(Effect.merge, Effect.flatMap(toResponse))

    for (const resource of settings.resources) {
      const path = resource.path as `/${string}`
      yield* router.add("POST", path, post(resource))
      yield* router.add("GET", path, get(resource))
      yield* router.add("DELETE", path, del(resource))
      for (const method of ["POST", "GET", "DELETE"]) extraRoutes(method, new RegExp(`^${path.replace(/\/$/, "")}/?$`))
    }

    yield* installFastPath({
      resourceAt: (path) => byPath.get(path),
      originAllowed,
      versionSupported,
      bearer: (headers) => BEARER.exec(headers["authorization"] ?? "")?.[1],
      peekCaller: verifier.peek,
      peekSession: sessions.peek,
      toolFor,
      progressTokenOf,
      runTool,
      toolError,
      toolResult,
      validationFailed,
      handleMessage
    })
  })
).pipe(
  Layer.provide(McpSessions.DefaultWithoutDependencies),
  Layer.provide(OAuthLive),
  Layer.provide(AgentsLive),
  Layer.provide(AuditLog.Default)
)
