import * as Http from "node:http"
import { pipeline } from "node:stream"
import { Agent, request } from "undici"

/**
 * The control of bench/connectors.ts: about the least a proxy can do with undici (the client Switchyard
 * uses). It sends each request on to UPSTREAM_URL (same method, path and headers but the hop-by-hop
 * ones) on a keep-alive pool, and streams status, headers and body back. What it costs is the price of
 * "any proxy at all" in Node. Its own process, like bareServer.ts.
 */
const upstream = process.env["UPSTREAM_URL"]
if (upstream === undefined) throw new Error("UPSTREAM_URL is not set")

const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 256 })

const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host"
])

const forwardable = (headers: Http.IncomingHttpHeaders | Record<string, string | Array<string> | undefined>) => {
  const out: Record<string, string | Array<string>> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !hopByHop.has(name)) out[name] = value
  }
  return out
}

const server = Http.createServer((req, res) => {
  const bodyless = req.method === "GET" || req.method === "HEAD"
  request(upstream + (req.url ?? "/"), {
    method: (req.method ?? "GET") as "GET",
    headers: forwardable(req.headers),
    body: bodyless ? null : req,
    dispatcher
  }).then(
    (answer) => {
      res.writeHead(answer.statusCode, forwardable(answer.headers))
      pipeline(answer.body, res, () => undefined)
    },
    (error: Error) => {
      res.writeHead(502, { "content-type": "text/plain" })
      res.end(`upstream: ${error.message}`)
    }
  )
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  // the parent reads the port from this line
  if (address !== null && typeof address === "object") process.stdout.write(`listening ${address.port}\n`)
})

process.on("SIGTERM", () => server.close(() => dispatcher.close().finally(() => process.exit(0))))
