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
  write(chunk: Buffer): boolean
  end(): void
  fail(error: Error): void
}

class WritableSink implements BodySink {
  private waiting = false
  constructor(private readonly to: Writable, private readonly controller: Dispatcher.DispatchController) {}

  write(chunk: Buffer) {
    if (this.to.write(chunk) || this.waiting) return true
    this.waiting = true
    this.to.once("drain", () => {
      this.waiting = false
      this.controller.resume()
    })
    return false
  }

  end() {
    this.to.end()
  }

  fail() {
    this.to.destroy()
  }
}

/** Collects a body as text: a class, since tsx names each closure an object literal would create per call. */
class TextSink implements BodySink {
  readonly text: Promise<string>
  private readonly chunks: Array<Buffer> = []
  private resolve!: (text: string) => void
  private reject!: (error: Error) => void
  constructor() {
    this.text = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  write(chunk: Buffer) {
    this.chunks.push(chunk)
    return true
  }

  end() {
    const chunks = this.chunks
    this.resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"))
  }

  fail(error: Error) {
    this.reject(error)
  }
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
    this.attach(new WritableSink(to, this.controller))
  }

  /** The whole body as UTF-8 text. */
  text(): Promise<string> {
    const sink = new TextSink()
    this.attach(sink)
    return sink.text
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
 * One request to a target API, as the dispatcher's handler: a class, so a call allocates one object and no
 * closures. One timer covers the whole exchange, streaming of the response included (spec 4.5: 300 s); it is
 * cleared when the body is done.
 */
class UpstreamRequest implements Dispatcher.DispatchHandler, UpstreamCall {
  readonly response: Promise<UpstreamReply>
  private resolve!: (reply: UpstreamReply) => void
  private reject!: (error: unknown) => void
  private controller: Dispatcher.DispatchController | undefined
  private abortedWith: Error | undefined
  private body: UpstreamBody | undefined
  private done = false
  // several pooled connections may have gone stale together: each fails at once, so try a few
  private resends = RESENDS
  private readonly timer: ReturnType<typeof setTimeout>

  constructor(
    readonly dispatcher: Dispatcher,
    readonly options: Dispatcher.DispatchOptions,
    timeoutMs: number
  ) {
    this.response = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    this.timer = setTimeout(timedOut, timeoutMs, this)
    dispatcher.dispatch(options, this)
  }

  abort() {
    this.stop(CALLER_GONE)
  }

  stop(reason: Error) {
    if (this.abortedWith !== undefined || this.done) return
    this.abortedWith = reason
    clearTimeout(this.timer)
    // before the dispatcher has started the request, it is aborted as it starts
    this.controller?.abort(reason)
  }

  private end() {
    this.done = true
    clearTimeout(this.timer)
  }

  onRequestStart(controller: Dispatcher.DispatchController) {
    this.controller = controller
    if (this.abortedWith !== undefined) controller.abort(this.abortedWith)
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: UpstreamReply["headers"]) {
    this.body = new UpstreamBody(controller)
    this.resolve({ statusCode, headers, body: this.body })
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer) {
    this.body!.push(chunk)
  }

  onResponseEnd() {
    this.end()
    this.body!.finish()
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error) {
    if (this.body !== undefined) {
      this.end()
      return this.body.finish(error)
    }
    const code = (error as { code?: string }).code
    if (
      this.resends > 0 && this.abortedWith === undefined && IDEMPOTENT.has(this.options.method) &&
      CONNECTION_LOST.has(code!)
    ) {
      this.resends--
      // not from inside the failing connection's callback: the pool would not yet have settled its state
      return void process.nextTick(resend, this)
    }
    this.end()
    // undici reports an abort with its own error; the reason we gave is what callers classify
    this.reject(this.abortedWith ?? error)
  }
}

const timedOut = (request: UpstreamRequest) => request.stop(TIMED_OUT)
const resend = (request: UpstreamRequest) => request.dispatcher.dispatch(request.options, request)

/** Sends one request to a target API through `dispatcher` (the egress guard, or this node's own API). */
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
  const parsed = new URL(url)
  return new UpstreamRequest(dispatcher, {
    origin: parsed.origin,
    path: parsed.pathname + parsed.search,
    method: init.method.toUpperCase() as Dispatcher.HttpMethod,
    headers: init.headers,
    body: init.body ?? null,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs
  }, timeoutMs)
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
