/**
 * A streamed invoke through a buffering reverse proxy (issue 22). nginx is not installed where these tests
 * run, so the proxy is an equivalent Node one, written here: like nginx with `proxy_buffering on` it holds an
 * upstream answer until it ends (or fills its buffer), unless the answer carries `X-Accel-Buffering: no`, as
 * nginx honours. (The bundled deploy/nginx.conf also sets `proxy_buffering off`.) The stream must reach the
 * client as it is sent: the text's first piece long before the task's end.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent, user } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { readEventStream } from "./support.js"

/** nginx's default proxy buffers: 8 × 4 KiB (one page each) plus the first one. */
const BUFFER_BYTES = 9 * 4096

/** A reverse proxy that buffers answers unless they say `X-Accel-Buffering: no` (or `honour` is off). */
const startBufferingProxy = async (upstream: string, options: { readonly honourAccel: boolean }) => {
  const target = new URL(upstream)
  const server = Http.createServer((req, res) => {
    const forwarded = Http.request({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, host: target.host, "x-forwarded-for": "127.0.0.1" }
    }, (answer) => {
      const unbuffered = options.honourAccel && answer.headers["x-accel-buffering"] === "no"
      const headers = { ...answer.headers }
      // nginx does not pass X-Accel-* headers on to the client
      delete headers["x-accel-buffering"]
      res.writeHead(answer.statusCode ?? 502, headers)
      if (unbuffered) return void answer.pipe(res)
      let held: Array<Buffer> = []
      let size = 0
      answer.on("data", (chunk: Buffer) => {
        held.push(chunk)
        size += chunk.length
        if (size >= BUFFER_BYTES) {
          res.write(Buffer.concat(held))
          held = []
          size = 0
        }
      })
      answer.on("end", () => res.end(Buffer.concat(held)))
    })
    forwarded.on("error", () => res.destroy())
    req.pipe(forwarded)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))
  }
}

let node: TestNode
let apiKey: string
let agentId: string
let honouring: Awaited<ReturnType<typeof startBufferingProxy>>
let ignoring: Awaited<ReturnType<typeof startBufferingProxy>>
beforeAll(async () => {
  node = await startTestNode()
  apiKey = (await node.bootstrap()).api_key
  // four pieces of text, 250 ms apart
  const turn = { text: "Rex is a good dog who likes long walks in the park.", delay_ms: 1000 }
  const agent = await createAgent(node, apiKey, {
    name: "proxied",
    model: { provider: "scripted", script: [turn] }
  })
  agentId = agent.id
  honouring = await startBufferingProxy(node.baseUrl, { honourAccel: true })
  ignoring = await startBufferingProxy(node.baseUrl, { honourAccel: false })
})
afterAll(async () => {
  await honouring?.close()
  await ignoring?.close()
  await node?.stop()
})

/** A streamed invoke through `proxy`: when each event arrived, relative to the stream's end. */
const through = async (proxy: string) => {
  const response = await fetch(`${proxy}/v1/agents/${agentId}/invoke`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ input: { text: "which pet?", user } })
  })
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/event-stream")
  const arrived: Array<{ event: string; at: number }> = []
  expect(await readEventStream(response, (e) => void arrived.push({ event: e.event, at: performance.now() })))
    .toBe("ended")
  const end = performance.now()
  return arrived.map((e) => ({ event: e.event, before: end - e.at }))
}

describe("a streamed invoke through a buffering reverse proxy", () => {
  it("passes through unbuffered (X-Accel-Buffering: no): the first text arrives long before the end", async () => {
    const events = await through(honouring.url)
    const deltas = events.filter((e) => e.event === "task.output.delta")
    expect(deltas.length).toBe(4)
    expect(events.at(-1)!.event).toBe("task.completed")
    // pieces 250 ms apart: the first reached the client while the model was still answering
    expect(deltas[0]!.before).toBeGreaterThan(500)
  })

  it("the same proxy told to ignore the header holds the whole stream until the end (what the header prevents)", async () => {
    const events = await through(ignoring.url)
    expect(events.filter((e) => e.event === "task.output.delta").length).toBe(4)
    expect(Math.max(...events.map((e) => e.before))).toBeLessThan(100)
  })
})
