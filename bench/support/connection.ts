import * as Net from "node:net"

/**
 * One keep-alive HTTP/1.1 connection on a raw socket, one request at a time. node:http's client costs
 * several times more CPU per request, and on 2 shared cores the client's CPU is taken from the server
 * under test: through it the bare baseline read ~5k req/s here (the client's limit), with this ~36k. The parser handles what
 * our servers send: Content-Length or chunked bodies; anything else counts as an error.
 */
export interface Outcome {
  /** HTTP status, or "error:<reason>" when no usable response came back. */
  readonly status: string
  readonly ok: boolean
  /** The complete response (head and body, a view of the socket's bytes) when one came back: see `responseBody`. */
  readonly response?: Buffer
}

const headEnd = Buffer.from("\r\n\r\n")

interface Parsed {
  /** Bytes of the complete response at the start of the buffer, `0` if incomplete, `-1` if unparseable. */
  readonly length: number
  readonly status: number
  /** The server sent `connection: close`. */
  readonly close: boolean
}

const responseLength = (buf: Buffer): Parsed => {
  const end = buf.indexOf(headEnd)
  if (end < 0) return { length: 0, status: 0, close: false }
  const head = buf.toString("latin1", 0, end)
  const status = Number.parseInt(head.slice(9, 12), 10)
  const close = /\r\nconnection:\s*close/i.test(head)
  const bodyStart = end + 4
  const contentLength = /\r\ncontent-length:\s*(\d+)/i.exec(head)
  if (contentLength) {
    const total = bodyStart + Number(contentLength[1])
    return { length: buf.length >= total ? total : 0, status, close }
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    // no body framing: only bodiless statuses are valid
    return { length: status === 204 || status === 304 ? bodyStart : -1, status, close }
  }
  let pos = bodyStart
  for (;;) {
    const lineEnd = buf.indexOf("\r\n", pos)
    if (lineEnd < 0) return { length: 0, status, close }
    const size = Number.parseInt(buf.toString("latin1", pos, lineEnd), 16)
    if (Number.isNaN(size)) return { length: -1, status, close }
    // the last chunk is "0\r\n\r\n" (we send no TE header, so no trailers are expected)
    const next = lineEnd + 2 + size + 2
    if (buf.length < next) return { length: 0, status, close }
    if (size === 0) return { length: next, status, close }
    pos = next
  }
}

/** The body of a complete response (`Outcome.response`) as UTF-8 text, de-chunked when it was chunked. */
export const responseBody = (response: Buffer): string => {
  const end = response.indexOf(headEnd)
  if (end < 0) return ""
  const head = response.toString("latin1", 0, end)
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return response.toString("utf8", end + 4)
  const chunks: Array<Buffer> = []
  let pos = end + 4
  for (;;) {
    const lineEnd = response.indexOf("\r\n", pos)
    const size = lineEnd < 0 ? 0 : Number.parseInt(response.toString("latin1", pos, lineEnd), 16)
    if (!(size > 0)) return Buffer.concat(chunks).toString("utf8")
    chunks.push(response.subarray(lineEnd + 2, lineEnd + 2 + size))
    pos = lineEnd + 2 + size + 2
  }
}

export class Connection {
  private socket: Net.Socket | undefined
  private buffer: Buffer = Buffer.alloc(0)
  private pending: ((outcome: Outcome) => void) | undefined

  constructor(private readonly host: string, private readonly port: number, private readonly request: Buffer) {}

  /** Sends the connection's request, or `request` (bytes from `requestBytes`) for this call only. */
  send(request: Buffer = this.request): Promise<Outcome> {
    return new Promise((resolve) => {
      this.pending = resolve
      this.buffer = Buffer.alloc(0)
      this.connected().write(request)
    })
  }

  close(): void {
    this.socket?.destroy()
    this.socket = undefined
  }

  private settle(outcome: Outcome) {
    const resolve = this.pending
    this.pending = undefined
    resolve?.(outcome)
  }

  /** (Re)connects lazily: a server may close a keep-alive socket between requests. */
  private connected(): Net.Socket {
    if (this.socket !== undefined && !this.socket.destroyed) return this.socket
    const socket = Net.connect({ host: this.host, port: this.port, noDelay: true })
    // events of a socket we already dropped must not settle the next request on a new one
    const current = () => this.socket === socket
    socket.on("data", (chunk: Buffer) => {
      if (!current()) return
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk])
      const { close, length, status } = responseLength(this.buffer)
      if (length === 0) return
      if (length < 0) {
        this.close()
        return this.settle({ status: "error:unparseable-response", ok: false })
      }
      const response = this.buffer.subarray(0, length)
      this.buffer = this.buffer.subarray(length)
      // the server closes after this response: drop the socket now, or the next request races its FIN
      if (close) this.close()
      this.settle({ status: String(status), ok: status >= 200 && status < 300, response })
    })
    // a hung server must fail the request, not the whole run; idle sockets between requests are fine
    socket.setTimeout(10_000, () => {
      if (!current() || this.pending === undefined) return
      this.close()
      this.settle({ status: "error:timeout", ok: false })
    })
    socket.on("error", (e: NodeJS.ErrnoException) => {
      if (current()) this.settle({ status: `error:${e.code ?? e.message}`, ok: false })
    })
    socket.on("close", () => {
      if (!current()) return
      this.socket = undefined
      this.settle({ status: "error:connection-closed", ok: false })
    })
    this.socket = socket
    return socket
  }
}

/**
 * The request bytes, built once: a client that formats headers per request would spend the cores too.
 * Without a body it is a bodiless GET (or `method`); with one it carries `content-length`.
 */
export const requestBytes = (
  url: URL,
  headers: Readonly<Record<string, string>>,
  request: { readonly method?: string; readonly body?: string } = {}
): Buffer => {
  const body = request.body === undefined ? undefined : Buffer.from(request.body, "utf8")
  const head = Buffer.from(
    [
      `${request.method ?? "GET"} ${url.pathname}${url.search} HTTP/1.1`,
      `host: ${url.host}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      ...(body === undefined ? [] : [`content-length: ${body.length}`]),
      "",
      ""
    ].join("\r\n"),
    "latin1"
  )
  return body === undefined ? head : Buffer.concat([head, body])
}
