import * as Http from "node:http"

/**
 * The target API of bench/connectors.ts: `GET /items/{id}` answers a ~1 KB JSON document at once, if the
 * request carries `X-Api-Key: k` (the connection's credential, so a proxy that drops it shows up as
 * errors); anything else is 401 or 404. Its own process, like bareServer.ts.
 */
const apiKey = "k"

const item = (id: string) =>
  JSON.stringify({
    id,
    name: `Item ${id}`,
    description: "A benchmark item. ".repeat(47),
    tags: ["alpha", "beta", "gamma", "delta"],
    price: { amount: 1999, currency: "EUR" },
    stock: 42,
    updated_at: "2026-11-23T10:15:30.123000Z"
  })

// the same bytes for every id we are asked for in practice: build them once
const cache = new Map<string, Buffer>()

const server = Http.createServer((req, res) => {
  const match = req.method === "GET" ? /^\/items\/([^/?]+)$/.exec(req.url ?? "") : null
  if (match === null) {
    res.writeHead(404, { "content-length": 0 })
    return res.end()
  }
  if (req.headers["x-api-key"] !== apiKey) {
    res.writeHead(401, { "content-length": 0 })
    return res.end()
  }
  const id = decodeURIComponent(match[1]!)
  let body = cache.get(id)
  if (body === undefined) {
    body = Buffer.from(item(id))
    if (cache.size < 100) cache.set(id, body)
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length })
  res.end(body)
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  // the parent reads the port from this line
  if (address !== null && typeof address === "object") process.stdout.write(`listening ${address.port}\n`)
})

process.on("SIGTERM", () => server.close(() => process.exit(0)))
