import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { type NodeProcess, spawnNode } from "./NodeProcess.js"
import { freePort } from "./ports.js"

export interface ClusterNode {
  readonly index: number
  process: NodeProcess
  readonly env: Record<string, string>
}

export interface Cluster {
  /** The round-robin proxy in front of the nodes: what clients use. */
  readonly url: string
  readonly nodes: Array<ClusterNode>
  readonly kill: (index: number) => Promise<void>
  readonly pause: (index: number) => void
  readonly resume: (index: number) => void
  readonly restart: (index: number) => Promise<void>
  readonly add: () => Promise<ClusterNode>
  readonly stop: () => Promise<void>
}

/**
 * N real node processes on one database, each with its own HTTP and runner ports, behind a tiny
 * round-robin HTTP proxy (no sticky sessions). A request that cannot reach its node is retried on the
 * next one when nothing was sent yet, as a load balancer does; the harness can SIGKILL, SIGSTOP/SIGCONT
 * and restart any node.
 */
export const startCluster = async (
  options: {
    readonly nodes: number
    readonly env: Record<string, string>
    /** The proxy's port, when the nodes must know their public address (SWITCHYARD_PUBLIC_URL) up front. */
    readonly proxyPort?: number
  }
): Promise<Cluster> => {
  const nodes: Array<ClusterNode> = []
  const start = async (index: number): Promise<ClusterNode> => {
    const env = {
      ...options.env,
      SWITCHYARD_HTTP_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_PORT: String(await freePort()),
      SWITCHYARD_RUNNER_HOST: "127.0.0.1"
    }
    const node = { index, process: spawnNode(env), env }
    await node.process.waitReady()
    return node
  }
  // started together, as a deployment's replicas are: each is ready once it owns shards
  nodes.push(...await Promise.all(Array.from({ length: options.nodes }, (_, i) => start(i))))

  let next = 0
  const live = () => nodes.filter((n) => n.process.child.exitCode === null && n.process.child.signalCode === null)
  const forward = (req: Http.IncomingMessage, body: Buffer, res: Http.ServerResponse, tried: Set<number>) => {
    const candidates = live().filter((n) => !tried.has(n.index))
    if (candidates.length === 0) {
      res.writeHead(502, { "content-type": "application/json" })
      return res.end(JSON.stringify({ error: { code: "no_backend", message: "no node could take the request" } }))
    }
    const node = candidates[next++ % candidates.length]!
    tried.add(node.index)
    const upstream = Http.request(
      node.process.baseUrl + (req.url ?? "/"),
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    // retry elsewhere when the request cannot have been read: a refused connection (a dead or closing
    // node), or a reset of a reused keep-alive socket the node had just closed as idle (Node's advice)
    upstream.on("error", (e: NodeJS.ErrnoException) => {
      const unread = e.code === "ECONNREFUSED" || (e.code === "ECONNRESET" && upstream.reusedSocket)
      if (unread && !res.headersSent) return forward(req, body, res, tried)
      console.log(`proxy: ${req.method} ${req.url} to node ${node.index} failed (${e.code ?? e.message}); resetting`)
      res.destroy()
    })
    upstream.end(body)
  }
  const proxy = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => forward(req, Buffer.concat(chunks), res, new Set()))
  })
  // idle client connections stay open longer than the client keeps them (as nginx's 75 s): with Node's 5 s,
  // a request sent on a connection the proxy was closing as idle was reset (a test that waited a few seconds
  // between requests saw `fetch failed`)
  proxy.keepAliveTimeout = 65_000
  await new Promise<void>((resolve) => proxy.listen(options.proxyPort ?? 0, "127.0.0.1", resolve))

  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    nodes,
    kill: async (i) => void (await nodes[i]!.process.stop("SIGKILL")),
    pause: (i) => void nodes[i]!.process.child.kill("SIGSTOP"),
    resume: (i) => void nodes[i]!.process.child.kill("SIGCONT"),
    restart: async (i) => {
      const node = nodes[i]!
      if (node.process.child.exitCode === null && node.process.child.signalCode === null) await node.process.stop()
      node.process = spawnNode(node.env)
      await node.process.waitReady()
    },
    add: async () => {
      const node = await start(nodes.length)
      nodes.push(node)
      return node
    },
    stop: async () => {
      proxy.closeAllConnections()
      proxy.close()
      await Promise.all(nodes.map((n) => {
        n.process.child.kill("SIGCONT")
        return n.process.stop()
      }))
    }
  }
}
