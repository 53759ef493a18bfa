import { Duration, Effect, Layer } from "effect"
import type * as Http from "node:http"
import { pipeline } from "node:stream/promises"
import type { AppliedCredentials } from "../../cluster/ConnectionEntity.js"
import type { ConnectionId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectionCredentials } from "../connectors/ConnectionCredentials.js"
import { Connections } from "../connectors/Connections.js"
import { ConnectorsLive } from "../connectors/ConnectorsLive.js"
import { Egress } from "../connectors/Egress.js"
import { InvocationRecorder } from "../connectors/InvocationRecorder.js"
import { invocationOf } from "../connectors/OperationInvoker.js"
import { type InvokeTarget, prepareCall } from "../connectors/PreparedCall.js"
import { classifyFailure, passThroughHeaders, startUpstream } from "../connectors/Upstream.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { Drain } from "./Drain.js"
import { errorEnvelope, type ErrorFields, OWN_ERROR_HEADER } from "./ErrorEnvelope.js"
import { makeFastAccessLog } from "./FastAccessLog.js"
import { parseJsonBody, requestProblem } from "./JsonBody.js"
import { NodeRequestGate } from "./NodeRequestGate.js"
import { requestIdOf } from "./RequestPipeline.js"

const ROUTE = /^\/v1\/tools\/connectors\/([^/?#]+)\/connections\/([0-9a-fA-F-]{36})\/([^/?#]+)$/
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

const writeError = (res: Http.ServerResponse, status: number, requestId: string, error: ErrorFields) => {
  res.writeHead(status, { "content-type": "application/json", "x-request-id": requestId, ...OWN_ERROR_HEADER })
  res.end(JSON.stringify(errorEnvelope(error, requestId)))
}

/**
 * The connector invoke route (spec 4.5) in plain Node, for the common case where everything it needs —
 * the verified key, the connection, the connector and its credentials — is already in this node's
 * memory. It declines anything else before reading the body, and the full Effect stack handles the
 * request instead; both give the same answers (the same tests run against both). It exists because the
 * per-request machinery of the general stack costs several times what proxying the call does.
 */
export const FastInvokeLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const gate = yield* NodeRequestGate
    const config = yield* SwitchyardConfig
    const drain = yield* Drain
    const authenticator = yield* ApiKeyAuthenticator
    const connections = yield* Connections
    const credentials = yield* ConnectionCredentials
    const recorder = yield* InvocationRecorder
    const egress = yield* Egress
    const logAccess = yield* makeFastAccessLog
    const timeoutMs = Math.max(1, Duration.toMillis(config.connectorTimeout))

    const handle = (
      req: Http.IncomingMessage,
      res: Http.ServerResponse,
      principal: Principal,
      target: InvokeTarget,
      applied: AppliedCredentials
    ) => {
      const started = performance.now()
      const requestId = requestIdOf(req.headers["x-request-id"] as string | undefined)
      const release = drain.enter()
      res.once("close", release)
      const fail = (status: number, error: { code: string; message: string; details?: unknown }) => {
        writeError(res, status, requestId, error)
        logAccess(req, status, started, requestId, principal.organizationId)
      }
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("error", () => res.destroy())
      req.on("end", () => {
        const parsed = parseJsonBody(Buffer.concat(chunks).toString("utf8"), {})
        if (!parsed.ok) return fail(400, parsed.error)
        const input = parsed.value
        if (typeof input !== "object" || input === null || Array.isArray(input)) {
          return fail(400, {
            code: "validation_failed",
            message:
              "The request body must be a JSON object with `body_params`, `query_params`, `path_params` and/or `headers`.",
            details: { issues: [{ path: "", message: "must be an object" }] }
          })
        }
        const prepared = prepareCall(target, input as never, applied, undefined)
        if (!prepared.ok) return fail(prepared.status, prepared)
        const base = invocationOf(principal, target, null, prepared.requestBytes)
        const { request } = prepared
        const call = startUpstream(request.url, request, egress.dispatcher, timeoutMs)
        let done = false
        res.once("close", () => !done && call.abort())
        call.response.then(
          (upstream) => {
            const length = Number(upstream.headers["content-length"])
            recorder.recordNow({
              ...base,
              status: upstream.statusCode,
              error_code: null,
              response_bytes: Number.isFinite(length) ? length : null,
              duration_ms: performance.now() - started
            })
            res.writeHead(upstream.statusCode, { ...passThroughHeaders(upstream.headers), "x-request-id": requestId })
            logAccess(req, upstream.statusCode, started, requestId, principal.organizationId)
            upstream.body.once("end", () => (done = true))
            pipeline(upstream.body, res).catch(() => res.destroy())
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
            if (!res.headersSent) fail(failure.status, failure)
          }
        )
      })
    }

    if (!config.connectorFastPath) return
    gate.setFastPath((req, res) => {
      if (req.method !== "POST" || drain.draining) return false
      const match = ROUTE.exec(req.url ?? "")
      if (match === null) return false
      const [, connectorId, connectionId, rawOperation] = match
      if (connectorId !== "_" && !UUID.test(connectorId!)) return false
      let operation: string
      try {
        operation = decodeURIComponent(rawOperation!)
      } catch {
        return false
      }
      // bodies of a declared size, JSON: anything else is the general stack's to answer
      const length = Number(req.headers["content-length"] ?? "0")
      if (req.headers["transfer-encoding"] !== undefined || !(length >= 0 && length <= config.maxBodyBytes)) {
        return false
      }
      if (requestProblem(req.url!, req.headers) !== undefined) return false
      const principal = authenticator.peek(req.headers["x-api-key"] as string | undefined)
      if (principal === undefined) return false
      const target = connections.peekTarget(principal, connectorId!, connectionId as ConnectionId, operation)
      // OAuth2 calls may need a token refresh and a retry: the general stack does that
      if (target === undefined || target.connection.auth_type === "oauth2") return false
      const applied = credentials.peek(target.connection.id)
      if (applied === undefined) return false
      handle(req, res, principal, target, applied)
      return true
    })
  })
).pipe(Layer.provide([ConnectorsLive, ApiKeyAuthenticator.Default]))
