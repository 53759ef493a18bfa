import * as Net from "node:net"
import { describe, expect, it } from "vitest"
import { startTestNode } from "../support/TestNode.js"

describe("stopping a node with a request that never completes", () => {
  it("cuts the request's connection once SWITCHYARD_SHUTDOWN_GRACE has passed, and stops", async () => {
    const node = await startTestNode({ SWITCHYARD_SHUTDOWN_GRACE: "1 second" })
    const { port } = new URL(node.baseUrl)
    // a request whose body never comes: its connection is busy, not idle, until something cuts it
    const socket = Net.connect(Number(port), "127.0.0.1")
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject))
    const closed = new Promise<string>((resolve) => {
      let answer = ""
      socket.on("data", (chunk) => answer += String(chunk))
      socket.once("close", () => resolve(answer))
    })
    socket.write(
      "POST /v1/functions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
        "content-length: 100\r\n\r\n{\"name\":"
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    // Node's own request timeout (300 s by default) would end it long after this test's timeout
    await node.stop()
    // the connection was cut, not answered
    expect(await closed).toBe("")
  })
})
