import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Reply, startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { type LogLine, startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, json, petstore } from "./support.js"

// a target answering with the headers Switchyard owns, some in odd case, next to ordinary ones
const forger: Reply = (_request, response) => {
  response.writeHead(409, {
    "content-type": "application/json",
    "X-Switchyard-Error": "true",
    "x-switchyard-node": "evil",
    "X-Request-Id": "upstream-chosen-id",
    "x-upstream": "kept",
    "x-switchyard": "not ours: no dash after the prefix"
  })
  response.end(JSON.stringify({ error: { code: "forbidden", message: "posing as Switchyard" } }))
}

/**
 * Issue 19 item 7: a target's answer cannot pose as Switchyard's own, on either way a node answers an
 * invoke: `x-switchyard-*` from the target is dropped and `x-request-id` is always ours.
 */
describe.each([["fast path", "true"], ["general stack", "false"]])("upstream headers through the %s", (label, fast) => {
  let node: TestNode
  let target: TargetServer
  let apiKey: string
  let connector: any
  let connection: any
  const logs: Array<LogLine> = []

  beforeAll(async () => {
    node = await startTestNode({
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_CONNECTOR_FAST_PATH: fast,
      SWITCHYARD_API_KEY_CACHE_TTL: "10 minutes"
    }, { logs })
    target = await startTargetServer(forger)
    apiKey = (await node.bootstrap()).api_key
    connector = await createConnector(node, apiKey, petstore(target.url))
    connection = await createConnection(node, apiKey, connector.id, {
      name: "forger",
      credentials: { type: "api_key", value: "k" }
    })
  })
  afterAll(async () => {
    await node?.stop()
    await target?.close()
  })

  it("drops the target's x-switchyard-* headers and keeps our x-request-id", async () => {
    const requestIds: Array<string> = []
    // several calls: the first ones warm the caches the fast path needs, the later ones take it
    for (let i = 0; i < 3; i++) {
      const requestId = `forgery-${label.replace(/ /g, "-")}-${i}`
      requestIds.push(requestId)
      const response = await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${connection.id}/listPets`, {
        ...json({}),
        apiKey,
        headers: { "content-type": "application/json", "x-request-id": requestId }
      })
      expect(response.status).toBe(409)
      expect(response.headers.get("x-switchyard-error")).toBeNull()
      expect(response.headers.get("x-switchyard-node")).toBeNull()
      expect(response.headers.get("x-request-id")).toBe(requestId)
      expect(response.headers.get("x-upstream")).toBe("kept")
      expect(response.headers.get("x-switchyard")).toBe("not ours: no dash after the prefix")
      // the body is the target's, untouched
      expect(await response.json()).toEqual({ error: { code: "forbidden", message: "posing as Switchyard" } })
    }
    const fastIds = logs.filter((l) => l.annotations["fast_path"] === true).map((l) => l.annotations["request_id"])
    const tookFastPath = requestIds.some((id) => fastIds.includes(id))
    expect(tookFastPath).toBe(fast === "true")
  })

  it("still marks our own errors, next to the target's forged ones", async () => {
    const response = await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${connection.id}/nope`, {
      ...json({}),
      apiKey
    })
    expect(response.status).toBe(404)
    expect(response.headers.get("x-switchyard-error")).toBe("true")
  })

  it("refuses headers that HTTP cannot carry with a 400 naming them, before any call", async () => {
    const before = target.requests.length
    for (const headers of [{ "": "x" }, { "bad name": "x" }, { "x-ok": "line\r\nbreak" }, { "x-ok": "✓" }]) {
      const response = await node.fetch(`/v1/tools/connectors/${connector.id}/connections/${connection.id}/listPets`, {
        ...json({ headers }),
        apiKey
      })
      expect(response.status, JSON.stringify(headers)).toBe(400)
      const body = await response.json()
      expect(body.error.code).toBe("validation_failed")
      expect(body.error.message).toMatch(/header/)
    }
    expect(target.requests.length).toBe(before)
  })
})
