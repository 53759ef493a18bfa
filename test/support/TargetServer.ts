import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: Http.IncomingHttpHeaders
  readonly body: Buffer
  /** When it arrived (ms since the epoch). */
  readonly at: number
}

export type Reply = (request: RecordedRequest, response: Http.ServerResponse) => void | Promise<void>

export interface TargetServer {
  readonly url: string
  readonly requests: Array<RecordedRequest>
  /** Replace how the server answers (default: 200 echoing the request as JSON). */
  reply: Reply
  readonly close: () => Promise<void>
}

export const echo: Reply = (request, response) => {
  response.writeHead(200, { "content-type": "application/json", "x-upstream": "yes" })
  response.end(JSON.stringify({
    method: request.method,
    path: request.path,
    query: Object.fromEntries(request.query),
    headers: request.headers,
    body: request.body.toString("utf8")
  }))
}

/** A real HTTP server on 127.0.0.1 that records every request it receives. */
export const startTargetServer = async (reply: Reply = echo): Promise<TargetServer> => {
  const requests: Array<RecordedRequest> = []
  const target: { reply: Reply } = { reply }
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://target")
      const recorded = {
        method: req.method ?? "",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks),
        at: Date.now()
      }
      requests.push(recorded)
      Promise.resolve(target.reply(recorded, res)).catch((e) => {
        res.writeHead(500)
        res.end(String(e))
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get reply() {
      return target.reply
    },
    set reply(r: Reply) {
      target.reply = r
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
