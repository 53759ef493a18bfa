import * as Http from "node:http"

/**
 * The baseline: bare node:http answering what Switchyard's /healthz answers. It runs as its own process
 * (like the node) so it does not share an event loop with the load generator.
 */
const body = JSON.stringify({ status: "ok" })

const server = Http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
  } else {
    res.writeHead(404, { "content-length": 0 })
    res.end()
  }
})

server.listen(0, "127.0.0.1", () => {
  const address = server.address()
  // the parent reads the port from this line
  if (address !== null && typeof address === "object") process.stdout.write(`listening ${address.port}\n`)
})

process.on("SIGTERM", () => server.close(() => process.exit(0)))
