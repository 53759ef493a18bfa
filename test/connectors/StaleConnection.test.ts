import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke, petstore } from "./support.js"

/**
 * A target that answers the first request on each connection and keeps the connection open, then drops
 * the connection when a second request arrives on it: what a node sees when the target closed an idle
 * pooled connection while the node was paused (GC, a stalled VM) and did not notice before reusing it.
 */
const startDroppingTarget = async () => {
  const seen: Array<{ method: string; path: string; answered: boolean }> = []
  const server = Net.createServer((socket) => {
    let buffered = Buffer.alloc(0)
    let answered = 0
    socket.on("data", (chunk) => {
      buffered = Buffer.concat([buffered, chunk])
      const end = buffered.indexOf("\r\n\r\n")
      if (end === -1) return
      const head = buffered.subarray(0, end).toString("latin1")
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)
      if (buffered.length < end + 4 + length) return
      buffered = buffered.subarray(end + 4 + length)
      const [method, path] = head.split(" ")
      const answer = answered++ === 0
      seen.push({ method: method!, path: path!, answered: answer })
      if (!answer) return void socket.destroy()
      const body = JSON.stringify({ ok: true })
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
          `connection: keep-alive\r\n\r\n${body}`
      )
    })
    socket.on("error", () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as Net.AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe.each([["fast path", "true"], ["general stack", "false"]])("a stale pooled connection, %s", (_, fastPath) => {
  let node: TestNode
  let target: Awaited<ReturnType<typeof startDroppingTarget>>
  let apiKey: string
  let connector: any
  let connection: any

  beforeAll(async () => {
    node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1", SWITCHYARD_CONNECTOR_FAST_PATH: fastPath })
    target = await startDroppingTarget()
    apiKey = (await node.bootstrap()).api_key
    connector = await createConnector(node, apiKey, petstore(target.url))
    connection = await createConnection(node, apiKey, connector.id, {
      name: "dropping",
      credentials: { type: "api_key", value: "k" }
    })
  })
  afterAll(async () => {
    await node?.stop()
    await target?.close()
  })

  it("sends an idempotent request again on a new connection", async () => {
    for (const petId of ["one", "two", "three"]) {
      const response = await invoke(node, apiKey, connector.id, connection.id, "getPet", { path_params: { petId } })
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ ok: true })
    }
    const gets = target.seen.filter((s) => s.method === "GET")
    // every pet was answered once; the dropped attempts were on reused connections
    for (const petId of ["one", "two", "three"]) {
      expect(gets.filter((s) => s.path === `/pets/${petId}` && s.answered)).toHaveLength(1)
    }
    expect(gets.some((s) => !s.answered)).toBe(true)
  })

  it("does not send a POST again: the target may have acted on it", async () => {
    // a connection answered once, so the next request on it is dropped
    expect((await invoke(node, apiKey, connector.id, connection.id, "getPet", { path_params: { petId: "p" } })).status)
      .toBe(200)
    const before = target.seen.length
    const response = await invoke(node, apiKey, connector.id, connection.id, "createPet", {
      body_params: { name: "Rex" }
    })
    expect(response.status).toBe(502)
    expect((await response.json()).error.code).toBe("upstream_unreachable")
    expect(target.seen.slice(before)).toEqual([{ method: "POST", path: "/pets", answered: false }])
  })
})
