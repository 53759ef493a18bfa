import { Readable, type Writable } from "node:stream"
import type { Dispatcher, FormData } from "undici"
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

/** Where an answer's body goes: a response being written, a text being collected, a stream. */
interface BodySink {
  /** False: stop sending until `resume`. */
  readonly write: (chunk: Buffer) => boolean
  readonly end: () => void
  readonly fail: (error: Error) => void
}

/**
 * A target's response body as it arrives, held until one consumer takes it (`pipe`, `text`, `readable` or
 * `dump`). It is the dispatcher's own flow, with no stream in between: undici's `request()` wraps each
 * response in a Readable, an AbortSignal and their listeners, which cost as much CPU as the proxying itself.
 */
export class UpstreamBody {
  private held: Array<Buffer> | undefined = []
  private ended = false
  private error: Error | undefined
  private sink: BodySink | undefined
  constructor(private readonly controller: Dispatcher.DispatchController) {}

  /** @internal from the dispatch handler */
  push(chunk: Buffer) {
    if (this.sink === undefined) this.held!.push(chunk)
    else if (!this.sink.write(chunk)) this.controller.pause()
  }

  /** @internal */
  finish(error?: Error) {
    if (this.ended) return
    this.ended = true
    this.error = error
    if (this.sink === undefined) return
    if (error === undefined) this.sink.end()
    else this.sink.fail(error)
  }

  private attach(sink: BodySink) {
    const held = this.held!
    this.held = undefined
    this.sink = sink
    for (let i = 0; i < held.length; i++) sink.write(held[i]!)
    if (!this.ended) return
    if (this.error === undefined) sink.end()
    else sink.fail(this.error)
  }

  /** Writes the body to `to` (with backpressure), ending it; a failure midway destroys it. */
  pipe(to: Writable) {
    let waiting = false
    const resume = () => {
      waiting = false
      this.controller.resume()
    }
    this.attach({
      write: (chunk) => {
        if (to.write(chunk) || waiting) return true
        waiting = true
        to.once("drain", resume)
        return false
      },
      end: () => void to.end(),
      fail: () => void to.destroy()
    })
  }

  /** The whole body as UTF-8 text. */
  text(): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Array<Buffer> = []
      this.attach({
        write: (chunk) => chunks.push(chunk) > 0,
        end: () => resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")),
        fail: reject
      })
    })
  }

  /** As a Node stream, for whatever wants one (the general stack's raw response). */
  readable(): Readable {
    const stream = new Readable({
      read: () => this.controller.resume(),
      destroy: (error, callback) => {
        if (!this.ended) this.controller.abort(error ?? CALLER_GONE)
        callback(error)
      }
    })
    this.attach({
      write: (chunk) => stream.push(chunk),
      end: () => void stream.push(null),
      fail: (error) => void stream.destroy(error)
    })
    return stream
  }

  /** Reads and drops the body, so the connection can carry the next request. */
  dump() {
    this.attach({ write: () => true, end: () => undefined, fail: () => undefined })
  }
}

export interface UpstreamReply {
  readonly statusCode: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: UpstreamBody
}

export interface UpstreamCall {
  /** Rejects when no answer came (refused, unreachable, timed out, aborted). */
  readonly response: Promise<UpstreamReply>
  /** Aborts the request (and the response body, if it is still arriving); nothing once it is done. */
  readonly abort: () => void
}

/**
 * Sends one request to a target API through `dispatcher`. One timer covers the whole exchange, streaming of
 * the response included (spec 4.5: 300 s); it is cleared when the body is done.
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
  const method = init.method.toUpperCase()
  const parsed = new URL(url)
  const options: Dispatcher.DispatchOptions = {
    origin: parsed.origin,
    path: parsed.pathname + parsed.search,
    method: method as Dispatcher.HttpMethod,
    headers: init.headers,
    body: init.body ?? null,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs
  }
  let controller: Dispatcher.DispatchController | undefined
  let abortedWith: Error | undefined
  let started = false
  let body: UpstreamBody | undefined
  let resolve!: (r: UpstreamReply) => void
  let reject!: (e: unknown) => void
  const response = new Promise<UpstreamReply>((ok, fail) => {
    resolve = ok
    reject = fail
  })
  let done = false
  const abort = (reason: Error) => {
    if (abortedWith !== undefined || done) return
    abortedWith = reason
    clearTimeout(timer)
    // before the dispatcher has started the request, it is aborted as it starts
    controller?.abort(reason)
  }
  const timer = setTimeout(() => abort(TIMED_OUT), timeoutMs)
  // several pooled connections may have gone stale together: each fails at once, so try a few
  let left = RESENDS
  const handler: Dispatcher.DispatchHandler = {
    onRequestStart: (c) => {
      controller = c
      if (abortedWith !== undefined) c.abort(abortedWith)
    },
    onResponseStart: (c, statusCode, headers) => {
      started = true
      body = new UpstreamBody(c)
      resolve({ statusCode, headers: headers as UpstreamReply["headers"], body })
    },
    onResponseData: (_c, chunk) => body!.push(chunk),
    onResponseEnd: () => {
      done = true
      clearTimeout(timer)
      body!.finish()
    },
    onResponseError: (_c, error) => {
      if (started) {
        done = true
        clearTimeout(timer)
        return body!.finish(error)
      }
      const code = (error as { code?: string }).code
      if (left > 0 && abortedWith === undefined && IDEMPOTENT.has(method) && CONNECTION_LOST.has(code!)) {
        left--
        // not from inside the failing connection's callback: the pool would not yet have settled its state
        return void process.nextTick(() => dispatcher.dispatch(options, handler))
      }
      done = true
      clearTimeout(timer)
      // undici reports an abort with its own error; the reason we gave is what callers classify
      reject(abortedWith ?? error)
    }
  }
  dispatcher.dispatch(options, handler)
  return { response, abort: () => abort(CALLER_GONE) }
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
