import * as Http from "node:http"

/** What came back for one request; `outcome` says whether anything did. */
export interface RawResponse {
  readonly outcome: "answered" | "timeout" | "connection_error"
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  readonly ms: number
  /** For `connection_error`: what the socket said. */
  readonly error?: string
}

export interface RawRequest {
  readonly method: string
  /** Sent exactly as given: `..` and `.` segments are not resolved, as `fetch` would. */
  readonly path: string
  readonly headers: Record<string, string>
  readonly body?: Buffer | undefined
}

const agent = new Http.Agent({ keepAlive: true, maxSockets: 16 })

/** Cap on what is kept of a response body: more than any answer to the fuzz's inputs (at most 1 MB each). */
const MAX_KEPT = 32 * 1024 * 1024

/**
 * One request over node:http, not `fetch`: `fetch` resolves dot segments in the path and adds
 * `text/plain` to a string body without a content type, and both are inputs under test here.
 * `timeoutMs` bounds the whole exchange (AbortSignal.timeout): a server that never answers is a result.
 */
export const send = (baseUrl: string, request: RawRequest, timeoutMs: number): Promise<RawResponse> =>
  new Promise((resolve) => {
    const started = performance.now()
    const url = new URL(baseUrl)
    const done = (r: Omit<RawResponse, "ms">) => resolve({ ...r, ms: Math.round(performance.now() - started) })
    const signal = AbortSignal.timeout(Math.ceil(timeoutMs))
    let req: Http.ClientRequest
    try {
      req = Http.request({
        host: url.hostname,
        port: url.port,
        method: request.method,
        path: request.path,
        headers: request.body === undefined
          ? request.headers
          : { ...request.headers, "content-length": String(request.body.length) },
        agent,
        signal
      }, (res) => {
        // an event stream does not end: its answer is its status and headers
        if (String(res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          res.destroy()
          return done({ outcome: "answered", status: res.statusCode ?? 0, headers: res.headers, body: "" })
        }
        const chunks: Array<Buffer> = []
        let kept = 0
        res.on("data", (c: Buffer) => {
          if (kept < MAX_KEPT) chunks.push(c)
          kept += c.length
        })
        res.on("end", () =>
          done({
            outcome: "answered",
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8")
          }))
        res.on("error", (e) => failed(e))
      })
    } catch (e) {
      // node refuses some paths and header values itself: nothing was sent
      done({ outcome: "connection_error", status: 0, headers: {}, body: "", error: `not sent: ${String(e)}` })
      return
    }
    const failed = (e: Error) =>
      done(
        signal.aborted
          ? { outcome: "timeout", status: 0, headers: {}, body: "" }
          : { outcome: "connection_error", status: 0, headers: {}, body: "", error: e.message }
      )
    req.on("error", failed)
    req.end(request.body)
  })

/** Closes the kept-alive sockets, so a test or bench process can exit. */
export const closeConnections = () => agent.destroy()
