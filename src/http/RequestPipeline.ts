import {
  Headers,
  HttpIncomingMessage,
  HttpLayerRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Option, Tracer } from "effect"
import * as Crypto from "node:crypto"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { isConflict, isConnectionError } from "../db/ConnectionLoss.js"
import { oauthRefusal } from "../oauth/OAuthEndpoints.js"
import { validationError } from "../support/Issues.js"
import { makeAccessLog } from "./AccessLog.js"
import { Drain } from "./Drain.js"
import { errorEnvelope, type ErrorFields, OWN_ERROR_HEADER } from "./ErrorEnvelope.js"
import {
  bodyMustBeJson,
  declaresBody,
  dropRestOfUpload,
  inspectJsonText,
  invalidJson,
  isFileUpload,
  isJsonMediaType,
  payloadTooLarge,
  requestProblem
} from "./JsonBody.js"
import { CurrentRequest, type RequestInfo } from "./RequestContext.js"
import { MAX_PATH_SEGMENT, RouteTable } from "./RouteTable.js"
import { makeStaticCompression } from "./StaticCompression.js"

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** A sane incoming `x-request-id` is kept (tracing across services); otherwise a new one. */
export const requestIdOf = (incoming: string | undefined) =>
  incoming !== undefined && REQUEST_ID.test(incoming) ? incoming : Crypto.randomUUID()

/** Set on every answer, by every transport: its request id, and `Connection: close` while the node drains. */
export const answerHeaders = (requestId: string, draining: boolean): Record<string, string> =>
  draining ? { "x-request-id": requestId, connection: "close" } : { "x-request-id": requestId }

const errorResponse = (status: number, info: RequestInfo, error: ErrorFields, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(errorEnvelope(error, info.requestId), {
    status,
    headers: { ...headers, ...OWN_ERROR_HEADER }
  })

/** Writes a refusal the pipeline makes itself, before or around the route's handler. */
type Refuse = (
  status: number,
  error: ErrorFields,
  headers?: Record<string, string>
) => HttpServerResponse.HttpServerResponse

/**
 * The pipeline's refusals in the body the path answers in: ours, or OAuth's on the OAuth endpoints, whose
 * clients parse only that (the checks are the same; only how they are written differs).
 */
const refusalsFor = (url: string, info: RequestInfo): Refuse =>
  oauthRefusal(url) ?? ((status, error, headers) => errorResponse(status, info, error, headers))

/** HttpApi's own decode error becomes our `validation_failed` body, with the failing field paths. */

/** Our error bodies get the request id and the `x-switchyard-error` marker; decode errors our shape. */
const normalizeErrorResponse = (response: HttpServerResponse.HttpServerResponse, info: RequestInfo) => {
  if (response.status < 400 || response.body._tag !== "Uint8Array") return response
  let parsed: any
  try {
    parsed = JSON.parse(new TextDecoder().decode(response.body.body))
  } catch {
    return response
  }
  if (parsed?._tag === "HttpApiDecodeError") {
    return errorResponse(400, info, validationError(parsed.issues ?? []))
  }
  if (typeof parsed?.error?.code === "string") {
    const headers = Object.fromEntries(Object.entries(response.headers))
    return errorResponse(response.status, info, parsed.error, headers)
  }
  return response
}

const malformedEscape = (path: string) => {
  try {
    decodeURIComponent(path)
    return false
  } catch {
    return true
  }
}

/** What escaped the API (unknown routes, unreadable bodies, defects) in our error body. */
const failureResponse = (
  cause: Cause.Cause<unknown>,
  request: HttpServerRequest.HttpServerRequest,
  info: RequestInfo,
  refuse: Refuse,
  routes: RouteTable
) =>
  Effect.gen(function*() {
    const failure = Cause.squash(cause)
    if (failure instanceof HttpServerError.RouteNotFound) {
      const path = request.url.split("?")[0]!
      const allowed = routes.allowedMethods(path)
      if (allowed.includes(request.method)) {
        // the route exists for this method: the router refused a segment it could not decode, or one longer
        // than it matches
        return refuse(400, {
          code: "validation_failed",
          message: malformedEscape(path)
            ? "The path has a malformed percent-escape: write % as %25, and escape text as UTF-8 (%C3%A9)."
            : `A path segment is longer than ${MAX_PATH_SEGMENT} characters; no id is that long.`
        })
      }
      return allowed.length > 0
        ? refuse(405, {
          code: "method_not_allowed",
          message: `${request.method} is not allowed on ${path}; use ${allowed.join(" or ")}.`
        }, { allow: allowed.join(", ") })
        : refuse(404, {
          code: "route_not_found",
          message: `No route ${request.method} ${path}. See ${"/docs"} for the API.`
        })
    }
    if (failure instanceof HttpServerError.RequestError) {
      if (String((failure.cause as Error | undefined)?.message) === "maxBytes exceeded") {
        return refuse(413, payloadTooLarge())
      }
      return refuse(400, invalidJson)
    }
    const answer = yield* unexpectedFailure(cause, info.requestId)
    return refuse(answer.status, answer.error, answer.headers)
  })

/**
 * What a request gets for a failure that is not one of our errors: interrupted (503), the database gone
 * (503, logged), its transaction rolled back for a concurrent one (a deadlock: 503, to be sent again) or a
 * defect (500, logged with the cause, which is never sent). Also for the fast paths.
 */
export const unexpectedFailure = (cause: Cause.Cause<unknown>, requestId: string) =>
  Effect.gen(function*() {
    if (Cause.isInterruptedOnly(cause)) {
      return {
        status: 503,
        error: { code: "unavailable", message: "The request was interrupted; retry it." },
        headers: {}
      }
    }
    if (isConnectionError(Cause.squash(cause))) {
      yield* Effect.logError("database unavailable", cause)
      return {
        status: 503,
        error: { code: "database_unavailable", message: "The database is unavailable right now; retry shortly." },
        headers: { "retry-after": "2" }
      }
    }
    if (isConflict(Cause.squash(cause))) {
      yield* Effect.logWarning("a transaction was rolled back for a concurrent one's sake", cause)
      return {
        status: 503,
        error: {
          code: "database_conflict",
          message: "The request met a concurrent change in the database and was rolled back: send it again " +
            "(with the same Idempotency-Key, if it creates something)."
        },
        headers: { "retry-after": "1" }
      }
    }
    yield* Effect.logError("unhandled error", cause)
    return {
      status: 500,
      error: {
        code: "internal_error",
        message: `Something went wrong on our side. Quote the request id ${requestId} when reporting it.`
      },
      headers: {}
    }
  }).pipe(Effect.annotateLogs("request_id", requestId))

/**
 * Reads a JSON body once to check it (HttpApi reuses the cached text). HttpApi reads only types containing
 * `application/json` as JSON and would read the consumed stream again, forever, for `application/*+json`:
 * such a request is handed on as `application/json`, which our rule makes it equivalent to.
 */
const checkJsonBody = (request: HttpServerRequest.HttpServerRequest, refuse: Refuse) =>
  Effect.map(request.text, (text) => {
    const refused = inspectJsonText(text)
    if (refused !== undefined) return refuse(400, refused)
    const headers = request.headers as Record<string, string>
    if (!headers["content-type"]!.toLowerCase().includes("application/json")) {
      headers["content-type"] = "application/json"
    }
    return undefined
  })

/**
 * Around every request: request id, body limits, content type, one error shape, draining, one JSON
 * access-log line.
 */
export const RequestPipelineLive = HttpLayerRouter.middleware(
  Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const drain = yield* Drain
    const routes = yield* RouteTable
    const maxBody = Option.some(config.maxBodyBytes)
    // undefined when it would not be written
    const accessLog = yield* makeAccessLog
    const compressStatic = makeStaticCompression()
    return (
      handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest> =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const incoming = request.headers["x-request-id"]
        const info: RequestInfo = {
          requestId: requestIdOf(incoming),
          organizationId: undefined
        }
        const started = performance.now()
        const release = drain.enter()
        const length = Number(request.headers["content-length"] ?? 0)
        // a file upload streams to storage under a limit of its own
        const upload = isFileUpload(request.method, request.url)
        // the body rule is the API's; OAuth and sign-in forms outside /v1 have types of their own
        const problem = requestProblem(request.url, request.headers, bodyMustBeJson(request.method, request.url))
        const refuse = refusalsFor(request.url, info)
        const response = length > config.maxBodyBytes && !upload
          ? refuse(413, payloadTooLarge(length, config.maxBodyBytes))
          : problem !== undefined
          ? refuse(problem.status, problem.error)
          : yield* Effect.gen(function*() {
            const refused = !upload && declaresBody(request.headers) && isJsonMediaType(request.headers["content-type"])
              ? yield* checkJsonBody(request, refuse)
              : undefined
            return refused ?? (yield* handler)
          }).pipe(
            HttpIncomingMessage.withMaxBodySize(upload ? Option.none() : maxBody),
            Effect.locally(CurrentRequest, info),
            Effect.map((r) => normalizeErrorResponse(r, info)),
            Effect.catchAllCause((cause) => failureResponse(cause, request, info, refuse, routes)),
            // every line logged while the request runs can be found by the id its caller is given
            Effect.annotateLogs("request_id", info.requestId),
            Effect.onExit(() => Effect.sync(release))
          )
        release()
        accessLog?.({
          method: request.method,
          url: request.url,
          status: response.status,
          started,
          request_id: info.requestId,
          organization_id: info.organizationId,
          // the request's server span (HttpServerLive makes one while spans are exported)
          span: Option.getOrUndefined(yield* Effect.serviceOption(Tracer.ParentSpan))
        })
        if (upload && response.status >= 400) dropRestOfUpload(NodeHttpServerRequest.toIncomingMessage(request))
        const headers = answerHeaders(info.requestId, drain.isDraining())
        return HttpServerResponse.setHeaders(
          compressStatic(request.method, request.url, request.headers["accept-encoding"], response),
          Headers.fromInput(headers)
        )
      })
  }),
  { global: true }
)
