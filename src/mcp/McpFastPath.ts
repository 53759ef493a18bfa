import { Cause, Duration, Effect, Exit, Fiber, type ParseResult, Runtime } from "effect"
import type * as Http from "node:http"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectionCredentials } from "../connectors/ConnectionCredentials.js"
import { Connections } from "../connectors/Connections.js"
import { Egress } from "../connectors/Egress.js"
import { InvocationRecorder } from "../connectors/InvocationRecorder.js"
import { invocationOf } from "../connectors/OperationInvoker.js"
import { prepareCall } from "../connectors/PreparedCall.js"
import { classifyFailure, startUpstream } from "../connectors/Upstream.js"
import { Drain } from "../http/Drain.js"
import { errorEnvelope, type ErrorFields, OWN_ERROR_HEADER } from "../http/ErrorEnvelope.js"
import { makeFastAccessLog } from "../http/FastAccessLog.js"
import { declaresBody, inspectJsonText, isJsonMediaType } from "../http/JsonBody.js"
import { NodeRequestGate } from "../http/NodeRequestGate.js"
import { requestIdOf, unexpectedFailure } from "../http/RequestPipeline.js"
import type { ProtectedResource } from "../oauth/Resources.js"
import type { McpCaller } from "../oauth/TokenVerifier.js"
import { classify, type JsonRpcId, type JsonRpcRequest, result } from "./JsonRpc.js"
import type { Answer, ToolCall } from "./McpEndpoint.js"
import type { ToolContext } from "./McpTool.js"
import type { LoadedTool } from "./ToolRegistry.js"
import { upstreamAnswer } from "./UpstreamAnswer.js"

type Headers = Readonly<Record<string, string | undefined>>
/** A `tools/call` result (a tool's output or its error), as JSON. */
type ToolCallResult = unknown

/** What the fast path shares with the Effect route in McpEndpoint.ts: every check and answer comes from there. */
export interface McpCore {
  /** The resource called at a request's path (`/mcp/` or `/mcp`), as the Effect route sees it. */
  readonly resourceAt: (path: string) => ProtectedResource | undefined
  readonly originAllowed: (origin: string | undefined) => boolean
  readonly versionSupported: (version: string | undefined) => boolean
  readonly bearer: (headers: Headers) => string | undefined
  readonly peekCaller: (token: string, resource: string) => McpCaller | undefined
  readonly peekSession: (caller: McpCaller, id: string | undefined) => unknown
  readonly toolFor: (
    resource: ProtectedResource,
    caller: McpCaller,
    message: JsonRpcRequest & { readonly id: JsonRpcId }
  ) => ToolCall | Answer
  readonly progressTokenOf: (message: JsonRpcRequest, headers: Headers) => string | number | undefined
  readonly runTool: (loaded: LoadedTool, args: unknown, context: ToolContext) => Effect.Effect<ToolCallResult>
  readonly toolError: (error: ErrorFields) => ToolCallResult
  readonly toolResult: (encoded: unknown) => ToolCallResult
  readonly validationFailed: (error: ParseResult.ParseError) => ToolCallResult
  readonly handleMessage: (
    resource: ProtectedResource,
    caller: McpCaller,
    text: string,
    headers: Headers,
    sessionChecked: boolean
  ) => Effect.Effect<Answer>
}

/**
 * `POST /mcp/` in plain Node when the caller's token and session were verified recently on this node
 * (both caches also serve the Effect route, with the same TTL): it declines anything else before reading
 * the body, and the Effect route answers instead — a missing or bad token, a foreign Origin, an
 * unsupported protocol version, an unknown session, a wrong content type. A taken request is answered
 * by the Effect route's own code (`handleMessage`), run without the router and request pipeline; a
 * `tools/call` of `invoke_operation` whose connection, connector and credentials are in memory runs
 * without Effect at all, like the REST fast path (src/http/FastInvoke.ts). The same tests run against
 * both (test/mcp/FastPath.test.ts); SWITCHYARD_CONNECTOR_FAST_PATH=false turns both fast paths off.
 */
export const installFastPath = (core: McpCore) =>
  Effect.gen(function*() {
    const gate = yield* NodeRequestGate
    const config = yield* SwitchyardConfig
    const drain = yield* Drain
    const connections = yield* Connections
    const credentials = yield* ConnectionCredentials
    const recorder = yield* InvocationRecorder
    const egress = yield* Egress
    const runtime = yield* Effect.runtime<never>()
    const logAccess = yield* makeFastAccessLog
    const timeoutMs = Math.max(1, Duration.toMillis(config.connectorTimeout))

    /** `invoke_operation` without Effect, when all it needs is in memory; undefined: run the tool instead. */
    const invokeOperation = (
      loaded: LoadedTool,
      args: unknown,
      caller: McpCaller,
      res: Http.ServerResponse,
      requestId: string
    ): Promise<ToolCallResult> | undefined => {
      const decoded = loaded.decodeEither(args)
      if (decoded._tag === "Left") return Promise.resolve(core.validationFailed(decoded.left))
      const { connection_id, connector_id, operation_id, ...input } = decoded.right
      const target = connections.peekTarget(caller.principal, connector_id, connection_id, operation_id)
      // OAuth2 calls may need a token refresh and a retry: the tool does that
      if (target === undefined || target.connection.auth_type === "oauth2") return undefined
      const applied = credentials.peek(target.connection.id)
      if (applied === undefined) return undefined
      const started = performance.now()
      const prepared = prepareCall(target, input, applied, undefined)
      if (!prepared.ok) {
        const { code, details, message } = prepared
        // as the tool reports BadRequest / Unprocessable (which carries no details)
        return Promise.resolve(core.toolError({
          code,
          message,
          ...(details === undefined || prepared.status === 422 ? {} : { details })
        }))
      }
      const base = invocationOf(caller.principal, target, null, prepared.requestBytes)
      const call = startUpstream(prepared.request.url, prepared.request, egress.dispatcher, timeoutMs)
      let done = false
      res.once("close", () => !done && call.abort())
      return call.response.then(
        (upstream) => {
          const length = Number(upstream.headers["content-length"])
          recorder.recordNow({
            ...base,
            status: upstream.statusCode,
            error_code: null,
            response_bytes: Number.isFinite(length) ? length : null,
            duration_ms: performance.now() - started
          })
          return upstream.body.text().then(
            (text) => {
              done = true
              const answer = upstreamAnswer(upstream.statusCode, upstream.headers["content-type"], text)
              const encoded = loaded.encodeEither(answer)
              if (encoded._tag === "Left") throw encoded.left
              return core.toolResult(encoded.right)
            },
            (error) => {
              done = true
              Runtime.runFork(runtime)(
                Effect.logError("MCP tool invoke_operation failed", Cause.die(error)).pipe(
                  Effect.annotateLogs("request_id", requestId)
                )
              )
              return core.toolError({
                code: "internal_error",
                message: "The tool failed on our side; try again later."
              })
            }
          )
        },
        (error) => {
          done = true
          const failure = classifyFailure(error, egress, timeoutMs)
          recorder.recordNow({
            ...base,
            status: null,
            error_code: failure.code,
            response_bytes: null,
            duration_ms: performance.now() - started
          })
          return core.toolError({
            code: failure.status === 504 ? "upstream_timeout" : failure.code,
            message: failure.message
          })
        }
      )
    }

    const handle = (
      req: Http.IncomingMessage,
      res: Http.ServerResponse,
      resource: ProtectedResource,
      caller: McpCaller,
      headers: Headers
    ) => {
      const started = performance.now()
      const requestId = requestIdOf(headers["x-request-id"])
      const release = drain.enter()
      res.once("close", release)

      const accessLog = (status: number) => logAccess(req, status, started, requestId, caller.principal.organizationId)
      const ids = () =>
        drain.draining ? { "x-request-id": requestId, connection: "close" } : { "x-request-id": requestId }
      const writeJson = (status: number, body: unknown, extra: Record<string, string> = {}) => {
        if (res.destroyed) return
        // as the request pipeline does: our own error bodies get the envelope and the marker header
        const error = status >= 400 ? (body as any)?.error : undefined
        const own = typeof error?.code === "string"
        res.writeHead(status, {
          "content-type": "application/json",
          ...extra,
          ...(own ? OWN_ERROR_HEADER : {}),
          ...ids()
        })
        res.end(JSON.stringify(own ? errorEnvelope(error, requestId) : body))
        accessLog(status)
      }
      const write = (answer: Answer) => {
        switch (answer._tag) {
          case "Json":
            return writeJson(answer.status, answer.body, answer.headers)
          case "Empty":
            if (res.destroyed) return
            res.writeHead(answer.status, ids())
            res.end()
            return accessLog(answer.status)
          case "Events":
            if (res.destroyed) return
            res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...ids() })
            accessLog(200)
            return run(answer.run((event) => Effect.sync(() => void res.write(event))), () => res.end())
        }
      }
      /** Runs an Effect for this request: interrupted when the client goes away, a defect answered as the pipeline does. */
      const run = <A>(effect: Effect.Effect<A>, onSuccess: (a: A) => void) => {
        const fiber = Runtime.runFork(runtime)(Effect.annotateLogs(effect, "request_id", requestId))
        const gone = () => Effect.runFork(Fiber.interrupt(fiber))
        res.once("close", gone)
        fiber.addObserver((exit) => {
          res.off("close", gone)
          if (Exit.isSuccess(exit)) return onSuccess(exit.value)
          if (res.headersSent) return res.destroy()
          failed(exit.cause)
        })
      }
      /** A failure that is not a tool's answer: what the request pipeline answers, logged with the request id. */
      const failed = (cause: Cause.Cause<unknown>) =>
        void Runtime.runPromise(runtime)(unexpectedFailure(cause, requestId)).then((answer) =>
          writeJson(answer.status, { error: answer.error }, answer.headers)
        )

      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("error", () => res.destroy())
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        const refused = declaresBody(headers) ? inspectJsonText(text) : undefined
        if (refused !== undefined) return writeJson(400, { error: refused })
        // the hot call: `tools/call` of invoke_operation, answered as JSON
        let message: (JsonRpcRequest & { readonly id: JsonRpcId }) | undefined
        try {
          const classified = classify(JSON.parse(text))
          if (classified._tag === "Request" && classified.message.method === "tools/call") message = classified.message
        } catch {
          // handleMessage answers the parse error
        }
        if (
          message !== undefined && message.params?.["name"] === "invoke_operation" &&
          core.progressTokenOf(message, headers) === undefined
        ) {
          const call = core.toolFor(resource, caller, message)
          if (!("_tag" in call)) {
            const id = message.id
            const answered = invokeOperation(call.loaded, call.args, caller, res, requestId)
            if (answered !== undefined) {
              return answered.then(
                (value) => writeJson(200, result(id, value)),
                (error) => failed(Cause.die(error))
              )
            }
            const context: ToolContext = { caller, wantsProgress: false, progress: () => Effect.void }
            return run(
              core.runTool(call.loaded, call.args, context),
              (value) => writeJson(200, result(id, value))
            )
          }
        }
        run(core.handleMessage(resource, caller, text, headers, true), write)
      })
    }

    if (!config.connectorFastPath) return
    gate.setFastPath((req, res) => {
      if (req.method !== "POST" || drain.draining) return false
      const resource = core.resourceAt(req.url ?? "")
      if (resource === undefined) return false
      const headers = req.headers as Headers
      // bodies of a declared size, JSON, from an allowed origin, in a supported version: anything else is the
      // Effect route's to answer (or refuse)
      const length = Number(headers["content-length"] ?? "0")
      if (headers["transfer-encoding"] !== undefined || !(length >= 0 && length <= config.maxBodyBytes)) return false
      if (!isJsonMediaType(headers["content-type"])) return false
      if (!core.originAllowed(headers["origin"]) || !core.versionSupported(headers["mcp-protocol-version"])) {
        return false
      }
      const token = core.bearer(headers)
      const caller = token === undefined ? undefined : core.peekCaller(token, resource.resource)
      if (caller === undefined || core.peekSession(caller, headers["mcp-session-id"]) === undefined) return false
      handle(req, res, resource, caller, headers)
      return true
    })
  })
