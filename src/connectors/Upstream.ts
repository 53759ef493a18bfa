import { type Dispatcher, type FormData, request } from "undici"
import type { Egress } from "./Egress.js"

// hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection, not to the message we pass on
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

/**
 * Headers Switchyard owns on its own answers: `x-switchyard-*` (`x-switchyard-error: true` marks our errors)
 * and `x-request-id` (the id to quote to us, set on every answer). A target's values for them would pose as
 * ours, so they are dropped.
 */
const isOwnHeader = (name: string) => name.startsWith("x-switchyard-") || name === "x-request-id"

/**
 * The target's response headers as every invoke path passes them on (REST, its fast path, MCP): without
 * hop-by-hop headers and without the ones Switchyard owns. Names are compared lower-case.
 */
export const passThroughHeaders = (headers: Record<string, string | Array<string> | undefined>) => {
  const out: Record<string, string | Array<string>> = {}
  for (const [rawName, value] of Object.entries(headers)) {
    const name = rawName.toLowerCase()
    if (value !== undefined && !HOP_BY_HOP.has(name) && !isOwnHeader(name)) out[name] = value
  }
  return out
}

// one reason for every abort: a fresh DOMException per call would capture a stack trace each time
const CALLER_GONE = Object.freeze(new Error("the caller went away"))
const TIMED_OUT = Object.freeze(Object.assign(new Error("timeout"), { name: "TimeoutError" }))

/**
 * A pooled keep-alive connection can be closed by the target while this node is not looking (a GC
 * pause, a stalled VM): the next request on it fails before any answer. Such a request is sent again
 * (at most RESENDS times) when its method is idempotent (RFC 9110 §9.2.2), as HTTP clients commonly do;
 * a POST or PATCH is not, since the target may have acted on it.
 */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"])
const CONNECTION_LOST = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"])
const RESENDS = 3

export interface UpstreamCall {
  readonly response: Promise<Dispatcher.ResponseData>
  /** Aborts the request (and the response body, if it is still streaming). */
  readonly abort: () => void
}

/**
 * Sends one request to a target API. One timer covers the whole exchange, streaming of the response
 * included (spec 4.5: 300 s); it is cleared when the body is done.
 */
export const startUpstream = (
  url: string,
  init: {
    readonly method: string
    readonly headers: Record<string, string>
    readonly body: string | FormData | undefined
  },
  dispatcher: Dispatcher,
  timeoutMs: number
): UpstreamCall => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(TIMED_OUT), timeoutMs)
  const method = init.method.toUpperCase()
  const send = () =>
    request(url, {
      method: method as "GET",
      headers: init.headers,
      body: init.body ?? null,
      dispatcher,
      signal: controller.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs
    })
  // several pooled connections may have gone stale together: each fails at once, so try a few
  const attempt = (left: number): ReturnType<typeof send> =>
    send().catch((error) => {
      if (left === 0 || !IDEMPOTENT.has(method) || !CONNECTION_LOST.has(error?.code) || controller.signal.aborted) {
        throw error
      }
      return attempt(left - 1)
    })
  const response = attempt(RESENDS).then(
    (r) => {
      r.body.once("close", () => clearTimeout(timer))
      return r
    },
    (error) => {
      clearTimeout(timer)
      throw error
    }
  )
  return {
    response,
    abort: () => {
      clearTimeout(timer)
      controller.abort(CALLER_GONE)
    }
  }
}

export interface CallFailure {
  readonly status: 403 | 502 | 504
  readonly code: "egress_refused" | "upstream_unreachable" | "upstream_timeout"
  readonly message: string
}

/** Why a call to a target failed, as our error: refused by the egress guard, timed out, or unreachable. */
export const classifyFailure = (error: any, egress: Egress, timeoutMs: number): CallFailure =>
  egress.refusal(error) !== undefined
    ? { status: 403, code: "egress_refused", message: egress.explain(error) }
    : error?.name === "TimeoutError" || error?.code === "UND_ERR_HEADERS_TIMEOUT"
    ? {
      status: 504,
      code: "upstream_timeout",
      message: `The target API did not answer within ${timeoutMs / 1000} s (SWITCHYARD_CONNECTOR_TIMEOUT).`
    }
    : {
      status: 502,
      code: "upstream_unreachable",
      message: `The target API could not be reached: ${egress.explain(error)}.`
    }
