import { Context } from "effect"
import type * as Http from "node:http"
import type { Duplex } from "node:stream"

/** Handles a request itself (true) or leaves it to the application (false), deciding synchronously. */
export type FastPath = (request: Http.IncomingMessage, response: Http.ServerResponse) => boolean
/** Takes an upgrade request's socket (true) or leaves it to the application (false), deciding synchronously. */
export type Upgrade = (request: Http.IncomingMessage, socket: Duplex, head: Buffer) => boolean

export class NodeRequestGate extends Context.Tag("http/NodeRequestGate")<NodeRequestGate, {
  /** Adds a fast path; each is asked in the order added until one takes the request. */
  readonly setFastPath: (fastPath: FastPath) => void
  /** Adds a taker of upgrade requests (the wait channel between nodes), asked before the application's. */
  readonly setUpgrade: (upgrade: Upgrade) => void
}>() {}

/**
 * Puts one "request" listener on the Node server in front of the application's: fast paths may take a
 * request first; until the application's handler is attached (the server listens before the routes are
 * built) a request gets a 503 to retry instead of waiting forever.
 */
export const gateRequests = (server: Http.Server): Context.Tag.Service<NodeRequestGate> => {
  let app: ((req: Http.IncomingMessage, res: Http.ServerResponse) => void) | undefined
  let appUpgrade: ((req: Http.IncomingMessage, socket: Duplex, head: Buffer) => void) | undefined
  const fast: Array<FastPath> = []
  const upgrades: Array<Upgrade> = []
  const on = server.on.bind(server)
  const off = server.off.bind(server)
  server.on = ((event: string, listener: (...args: Array<any>) => void) => {
    if (event === "request") app = listener
    else if (event === "upgrade") appUpgrade = listener
    else return on(event, listener)
    return server
  }) as typeof server.on
  server.off = ((event: string, listener: (...args: Array<any>) => void) => {
    if (event === "request") {
      if (app === listener) app = undefined
    } else if (event === "upgrade") {
      if (appUpgrade === listener) appUpgrade = undefined
    } else return off(event, listener)
    return server
  }) as typeof server.off
  on("upgrade", (req, socket, head) => {
    for (let i = 0; i < upgrades.length; i++) if (upgrades[i]!(req, socket, head)) return
    if (appUpgrade !== undefined) return appUpgrade(req, socket, head)
    socket.destroy()
  })
  on("request", (req, res) => {
    for (let i = 0; i < fast.length; i++) if (fast[i]!(req, res)) return
    if (app !== undefined) return app(req, res)
    res.writeHead(503, { "content-type": "application/json", "retry-after": "1", "x-switchyard-error": "true" })
    res.end(
      JSON.stringify({ error: { code: "unavailable", message: "This node is starting or stopping; retry shortly." } })
    )
  })
  return { setFastPath: (f) => void fast.push(f), setUpgrade: (f) => void upgrades.push(f) }
}
