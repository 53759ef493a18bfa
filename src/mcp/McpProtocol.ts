import { Cause, Deferred, Effect, Exit, Option, Runtime, type Tracer } from "effect"
import { AuditLog } from "../audit/AuditLog.js"
import { makeAskTool } from "../builtin/BuiltinAgent.js"
import { acceptsEventStream } from "../events/EventStreamResponse.js"
import { BUILTIN_MCP_PATH, type ProtectedResource } from "../oauth/Resources.js"
import type { McpCaller } from "../oauth/TokenVerifier.js"
import { VERSION } from "../support/Version.js"
import {
  type Classified,
  classify,
  ErrorCodes,
  failure,
  type JsonRpcId,
  type JsonRpcRequest,
  result
} from "./JsonRpc.js"
import { BATCH_VERSION, type Headers, McpAdmission, PROTOCOL_VERSIONS } from "./McpAdmission.js"
import {
  type Answer,
  batchAnswer,
  httpError,
  rpcResponse,
  sse,
  type ToolCallResult,
  toolDefect,
  toolError,
  toolResult,
  toolResultJson,
  validationFailed
} from "./McpAnswer.js"
import { McpSessions } from "./McpSessions.js"
import { type ToolContext, type ToolOutcome, type ToolServices, ToolText } from "./McpTool.js"
import { ToolJson } from "./ToolJson.js"
import { type LoadedTool, loadTools, registryOf } from "./ToolRegistry.js"

type Request = JsonRpcRequest & { readonly id: JsonRpcId }

/** The most messages a batch may hold: each may be a tool call, run one after another. */
const BATCH_MAX = 100

const kindOf = (value: unknown) => value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`

/**
 * The MCP protocol (spec 4.8), apart from any transport: what each JSON-RPC message of an admitted caller
 * (McpAdmission.ts) is answered, as an `Answer`. A
 * hand-rolled dispatcher (building an SDK server per request is several times slower, DESIGN §4), sessions in
 * PostgreSQL. Its transports: the Effect routes (McpEndpoint.ts) and the plain-Node fast path (McpFastPath.ts),
 * which takes the hot call, a `tools/call` of a tool with a `fast` variant, through `fastAnswer`.
 */
export class McpProtocol extends Effect.Service<McpProtocol>()("mcp/McpProtocol", {
  effect: Effect.gen(function*() {
    const sessions = yield* McpSessions
    const admission = yield* McpAdmission
    const registry = yield* loadTools
    const services = yield* Effect.context<ToolServices>()
    const audit = yield* AuditLog
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    /** A refusal on the MCP endpoint is recorded like one on REST (ACCESS_DENIED), in its own transaction. */
    const denied = (caller: McpCaller, tool: string, reason: string) =>
      audit.record(caller.principal, {
        action: "ACCESS_DENIED",
        outcome: "denied",
        targets: [{ type: "mcp_tool", id: tool }],
        details: { reason, grant_id: caller.grantId }
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("could not record a refusal", cause)))
    // the calls in flight on this node, by session and request id, that `notifications/cancelled` may name
    const inFlight = new Map<string, Deferred.Deferred<void>>()
    const callKey = (headers: Headers, id: unknown) => `${headers["mcp-session-id"] ?? ""}\n${typeof id}:${String(id)}`

    /**
     * Runs a call that a `notifications/cancelled` of its session may interrupt (MCP: the receiver stops
     * processing and sends no response): None when it was cancelled. `f` is told whether it was, for work
     * that outlives the call.
     */
    const cancellable = <A>(
      headers: Headers,
      id: JsonRpcId,
      f: (cancelled: Effect.Effect<boolean>) => Effect.Effect<A>
    ) =>
      Effect.gen(function*() {
        const key = callKey(headers, id)
        const signal = yield* Deferred.make<void>()
        inFlight.set(key, signal)
        // the loser is interrupted and awaited: a tool's own clean-up (invoke_agent's task) is done when this ends
        return yield* Effect.raceFirst(
          Effect.asSome(f(Deferred.isDone(signal))),
          Effect.as(Deferred.await(signal), Option.none<A>())
        ).pipe(Effect.ensuring(Effect.sync(() => inFlight.get(key) === signal && inFlight.delete(key))))
      })

    /** A `notifications/cancelled` (of a session checked already): the call it names stops, if it runs here. */
    const cancel = (headers: Headers, params: Record<string, unknown> | undefined) => {
      const signal = inFlight.get(callKey(headers, params?.["requestId"]))
      return signal === undefined ? Effect.void : Deferred.succeed(signal, undefined)
    }

    /**
     * A session ended (DELETE, checked already): every call of it running here stops as a cancelled one does
     * (an invoke_agent's task is cancelled); nobody is left to read their results.
     */
    const cancelSession = (sessionId: string) =>
      Effect.forEach(
        [...inFlight].filter(([key]) => key.startsWith(`${sessionId}\n`)),
        ([, signal]) => Deferred.succeed(signal, undefined),
        { discard: true }
      )

    const mayCall = (caller: McpCaller, loaded: LoadedTool) =>
      loaded.tool.annotations.readOnlyHint
        ? caller.scopes.includes("mcp:read") || caller.scopes.includes("mcp:write")
        : caller.scopes.includes("mcp:write")

    /**
     * A tool's outcome as its `tools/call` result (encoded to the wire form; an output that does not encode is a
     * defect, thrown); a refusal (`forbidden`) also gives the audit record to write.
     */
    const settle = (loaded: LoadedTool, caller: McpCaller, outcome: ToolOutcome<unknown>) => {
      if (outcome.ok) {
        // already in its wire form, with its JSON: neither encoded nor serialized again
        if (outcome.value instanceof ToolJson) {
          return { result: toolResultJson(outcome.value.value, outcome.value.json), audit: undefined }
        }
        const out = outcome.value instanceof ToolText ? outcome.value : undefined
        const encoded = loaded.encodeEither(out === undefined ? outcome.value : out.value)
        if (encoded._tag === "Left") throw encoded.left
        return { result: toolResult(encoded.right, out?.text), audit: undefined }
      }
      const { code, details, message } = outcome.error
      return {
        result: toolError({ code, message, ...(details === undefined ? {} : { details }) }),
        audit: code === "forbidden" ? denied(caller, loaded.tool.name, message) : undefined
      }
    }

    /** One tool call: decode against the contract, run the service as the caller, encode to the wire form. */
    const runTool = (loaded: LoadedTool, args: unknown, context: ToolContext) =>
      Effect.gen(function*() {
        const input = yield* loaded.decode(args).pipe(Effect.either)
        if (input._tag === "Left") return validationFailed(input.left)
        const exit = yield* loaded.tool.run(input.right, context).pipe(Effect.provide(services), Effect.exit)
        let outcome: ToolOutcome<unknown>
        if (Exit.isSuccess(exit)) outcome = { ok: true, value: exit.value }
        else {
          const failed = Cause.failureOption(exit.cause)
          if (failed._tag === "None") {
            yield* Effect.logError(`MCP tool ${loaded.tool.name} failed`, exit.cause)
            return toolDefect
          }
          outcome = { ok: false, error: failed.value }
        }
        const settled = yield* Effect.try(() => settle(loaded, context.caller, outcome)).pipe(Effect.orDie)
        if (settled.audit !== undefined) yield* settled.audit
        return settled.result
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
          runTool(loaded, args, {
            caller: context.caller,
            wantsProgress: false,
            progress: () => Effect.void,
            cancelled: Effect.succeed(false)
          }),
          (value: any) => ({ isError: "isError" in value, text: value.content[0]!.text })
        )
      }
    })
    const builtinRegistry = registryOf([ask])
    const registryFor = (resource: ProtectedResource) => resource.path === BUILTIN_MCP_PATH ? builtinRegistry : registry

    /** The tool a `tools/call` names and its arguments, or the JSON-RPC / scope error that answers it instead. */
    const toolFor = (resource: ProtectedResource, caller: McpCaller, message: Request) => {
      const params = message.params ?? {}
      const name = params["name"]
      if (typeof name !== "string") {
        const text = name === undefined
          ? "`params.name` is missing: name the tool to call (tools/list lists them)."
          : `\`params.name\` must be a tool's name (a string), not ${kindOf(name)}.`
        return rpcResponse(failure(message.id, ErrorCodes.invalidParams, text))
      }
      const loaded = registryFor(resource).byName.get(name)
      if (loaded === undefined) {
        return rpcResponse(
          failure(message.id, ErrorCodes.invalidParams, `Unknown tool: ${name}; tools/list lists them.`)
        )
      }
      // MCP's `arguments` is an object, or absent (the tool runs without any). Anything else is a malformed
      // request, not a call with odd arguments: `Schema.Struct({})` would take `[1,2]` or `"str"` as no arguments.
      const args = params["arguments"] === undefined ? {} : params["arguments"]
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        const text = `\`arguments\` must be an object, not ${
          kindOf(args)
        }; omit it to call ${loaded.tool.name} without any.`
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
      return (typeof token === "string" || typeof token === "number") && acceptsEventStream(headers["accept"])
        ? token
        : undefined
    }

    /** `streams`: whether the call may be answered as an event stream (not within a batch). */
    const toolsCall = (
      resource: ProtectedResource,
      caller: McpCaller,
      message: Request,
      headers: Headers,
      streams: boolean
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
        const token = streams ? progressTokenOf(message, headers) : undefined
        if (token === undefined) {
          const value = yield* cancellable(
            headers,
            message.id,
            (cancelled) =>
              runTool(loaded, args, { caller, wantsProgress: false, progress: () => Effect.void, cancelled })
          )
          // a cancelled call is not answered; the POST still needs a status
          return Option.match(value, {
            onNone: (): Answer => ({ _tag: "Empty", status: 202 }),
            onSome: (value) => rpcResponse(result(message.id, value))
          })
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
            // a cancelled call's stream ends without its result
            return cancellable(
              headers,
              message.id,
              (cancelled) => runTool(loaded, args, { caller, wantsProgress: true, progress, cancelled })
            ).pipe(
              Effect.flatMap(Option.match({
                onNone: () => Effect.void,
                onSome: (value) => send(sse(result(message.id, value)))
              }))
            )
          }
        } satisfies Answer
      })

    const initialize = (resource: ProtectedResource, caller: McpCaller, message: Request) =>
      Effect.gen(function*() {
        const params = message.params ?? {}
        const asked = params["protocolVersion"]
        if (typeof asked !== "string") {
          const text = asked === undefined
            ? "`params.protocolVersion` is missing: name the MCP version the client speaks, e.g. \"2025-11-25\"."
            : `\`params.protocolVersion\` must be a string, not ${kindOf(asked)}.`
          return rpcResponse(failure(message.id, ErrorCodes.invalidParams, text))
        }
        const version = PROTOCOL_VERSIONS.find((v) => v === asked) ?? PROTOCOL_VERSIONS[0]
        const id = yield* sessions.open(caller, version, params["clientInfo"])
        return rpcResponse(
          result(message.id, {
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
      })

    /** A message of a session, not `initialize`; `streams`: whether it may be answered as an event stream. */
    const dispatch = (
      resource: ProtectedResource,
      caller: McpCaller,
      classified: Exclude<Classified, { _tag: "Invalid" }>,
      headers: Headers,
      streams: boolean
    ) =>
      Effect.gen(function*() {
        if (classified._tag === "Notification" && classified.message.method === "notifications/cancelled") {
          yield* cancel(headers, classified.message.params)
        }
        if (classified._tag !== "Request") return { _tag: "Empty", status: 202 } satisfies Answer
        const message = classified.message
        switch (message.method) {
          case "ping":
            return rpcResponse(result(message.id, {}))
          case "tools/list":
            // one page, never a `nextCursor`: a cursor cannot be one of ours (MCP: an invalid cursor is -32602)
            if (message.params?.["cursor"] !== undefined) {
              const text = "Unknown cursor: tools/list answers every tool at once (no nextCursor); call it without one."
              return rpcResponse(failure(message.id, ErrorCodes.invalidParams, text))
            }
            return rpcResponse(result(message.id, { tools: registryFor(resource).list }))
          case "tools/call":
            return yield* toolsCall(resource, caller, message, headers, streams)
          default:
            return rpcResponse(failure(message.id, ErrorCodes.methodNotFound, `Method not found: ${message.method}`))
        }
      })

    /**
     * A JSON-RPC batch, which only a 2025-03-26 session takes: its messages in turn, answered together as JSON. A
     * tool beyond the token's scope refuses the batch (403) before any of it runs.
     */
    const batch = (resource: ProtectedResource, caller: McpCaller, messages: Array<unknown>, headers: Headers) =>
      Effect.gen(function*() {
        const { protocolVersion } = yield* admission.session(caller, headers)
        if (protocolVersion !== BATCH_VERSION || messages.length === 0 || messages.length > BATCH_MAX) {
          const reason = messages.length === 0
            ? "An empty batch: send at least one message."
            : messages.length > BATCH_MAX
            ? `A batch holds at most ${BATCH_MAX} messages, not ${messages.length}: send them in several.`
            : `A message is one JSON-RPC object: batches are part of MCP ${BATCH_VERSION} only, and this session ` +
              `speaks ${protocolVersion}.`
          return rpcResponse(failure(null, ErrorCodes.invalidRequest, reason), 400)
        }
        const all = messages.map(classify)
        for (const classified of all) {
          if (classified._tag !== "Request" || classified.message.method !== "tools/call") continue
          const call = toolFor(resource, caller, classified.message)
          if ("_tag" in call && call._tag === "Json" && call.status === 403) {
            yield* denied(caller, String(classified.message.params?.["name"]), "insufficient_scope")
            return call
          }
        }
        const answers: Array<Answer> = []
        for (const classified of all) {
          if (classified._tag === "Invalid") {
            answers.push(rpcResponse(failure(classified.id, ErrorCodes.invalidRequest, classified.reason)))
          } else if (classified._tag === "Request" && classified.message.method === "initialize") {
            const reason = "initialize cannot be part of a batch: send it alone."
            answers.push(rpcResponse(failure(classified.message.id, ErrorCodes.invalidRequest, reason)))
          } else answers.push(yield* dispatch(resource, caller, classified, headers, false))
        }
        return batchAnswer(answers)
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
        if (Array.isArray(body)) return yield* batch(resource, caller, body, headers)
        const classified = classify(body)
        if (classified._tag === "Invalid") {
          return rpcResponse(failure(classified.id, ErrorCodes.invalidRequest, classified.reason), 400)
        }
        if (classified._tag === "Request" && classified.message.method === "initialize") {
          return yield* initialize(resource, caller, classified.message)
        }
        if (!sessionChecked) yield* admission.session(caller, headers)
        return yield* dispatch(resource, caller, classified, headers, true)
      }).pipe(Effect.merge)

    /**
     * For the fast path, the hot message without a fiber: a `tools/call`, answered as JSON, of a tool with a
     * `fast` variant that takes it. Undefined for anything else (the fast path runs `handleMessage` then), also
     * for a scope refusal, which `handleMessage` records. Rejects on a defect.
     */
    const fastAnswer = (
      resource: ProtectedResource,
      caller: McpCaller,
      text: string,
      headers: Headers,
      onAbort: (abort: () => void) => void,
      parentSpan?: Tracer.AnySpan
    ): Promise<Answer> | undefined => {
      let classified
      try {
        classified = classify(JSON.parse(text))
      } catch {
        return undefined
      }
      if (classified._tag !== "Request" || classified.message.method !== "tools/call") return undefined
      const message = classified.message
      if (progressTokenOf(message, headers) !== undefined) return undefined
      const call = toolFor(resource, caller, message)
      if ("_tag" in call || call.loaded.tool.fast === undefined) return undefined
      const { loaded } = call
      const input = loaded.decodeEither(call.args)
      if (input._tag === "Left") return Promise.resolve(rpcResponse(result(message.id, validationFailed(input.left))))
      const running = loaded.tool.fast!(input.right, { caller, services, onAbort, parentSpan })
      return running?.then((outcome) => {
        const settled = settle(loaded, caller, outcome)
        if (settled.audit !== undefined) runFork(settled.audit)
        return rpcResponse(result(message.id, settled.result))
      })
    }

    return { handleMessage, fastAnswer, cancelSession } as const
  })
}) {}

export type { Answer, ToolCallResult }
