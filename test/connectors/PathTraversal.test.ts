import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createConnection, createConnector, invoke } from "./support.js"

// the built-in generic HTTP JSON connector: `/{resource}` and `/{resource}/{id}` under the connection's URL
const HTTP_JSON = "5e1f0000-0000-4000-8000-000000000001"

/** Issue 19 item 4: no path parameter value moves a call out of the connection's base path. */
describe.each([["fast path", "true"], ["general stack", "false"]])("path parameters through the %s", (_, fastPath) => {
  let node: TestNode
  let target: TargetServer
  let apiKey: string
  let connection: any

  beforeAll(async () => {
    node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1", SWITCHYARD_CONNECTOR_FAST_PATH: fastPath })
    target = await startTargetServer()
    apiKey = (await node.bootstrap()).api_key
    connection = await createConnection(node, apiKey, HTTP_JSON, {
      name: "tenant 42",
      server_url: `${target.url}/tenant/42/api`
    })
  })
  afterAll(async () => {
    await node?.stop()
    await target?.close()
  })

  const dotSegments = [".", "..", "%2e", "%2E%2e", "%2e.", ".%2E", "%252e%252e"]

  it.each(dotSegments)("refuses the dot segment %j as a path parameter with 400, before any call", async (value) => {
    const before = target.requests.length
    // twice: the second may be answered by the fast path once everything is cached
    for (let i = 0; i < 2; i++) {
      const response = await invoke(node, apiKey, HTTP_JSON, connection.id, "listResources", {
        path_params: { resource: value }
      })
      expect(response.status).toBe(400)
      expect(response.headers.get("x-switchyard-error")).toBe("true")
      const body = await response.json()
      expect(body.error.code).toBe("validation_failed")
      expect(body.error.details.issues).toEqual([
        { path: "path_params.resource", message: expect.stringContaining("dot segment") }
      ])
    }
    expect(target.requests.length).toBe(before)
  })

  it("refuses a dot segment in any path parameter, naming each", async () => {
    const before = target.requests.length
    const response = await invoke(node, apiKey, HTTP_JSON, connection.id, "getResource", {
      path_params: { resource: "..", id: ".." }
    })
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body.error.details.issues.map((i: any) => i.path).sort()).toEqual(["path_params.id", "path_params.resource"])
    expect(target.requests.length).toBe(before)
  })

  it("keeps every other value one encoded segment under the base path", async () => {
    const cases: Array<[Record<string, string>, string, string]> = [
      [{ resource: "users" }, "listResources", "/tenant/42/api/users"],
      [{ resource: "a/../../b" }, "listResources", "/tenant/42/api/a%2F..%2F..%2Fb"],
      [{ resource: "..." }, "listResources", "/tenant/42/api/..."],
      [{ resource: "x", id: "..%2f.." }, "getResource", "/tenant/42/api/x/..%252f.."],
      [{ resource: "a\\..", id: "?q#f" }, "getResource", "/tenant/42/api/a%5C../%3Fq%23f"]
    ]
    for (const [params, operation, path] of cases) {
      const before = target.requests.length
      const response = await invoke(node, apiKey, HTTP_JSON, connection.id, operation, { path_params: params })
      expect(response.status).toBe(200)
      expect(target.requests.length).toBe(before + 1)
      expect(target.requests[before]!.path).toBe(path)
    }
  })

  it("refuses an operation whose own path leads outside the server URL's base path with 422", async () => {
    const connector = await createConnector(node, apiKey, {
      openapi: "3.0.3",
      info: { title: "Escaping", version: "1" },
      servers: [{ url: `${target.url}/tenant/42/api` }],
      paths: { "/../../admin": { get: { operationId: "admin", responses: { "200": { description: "ok" } } } } }
    })
    const conn = await createConnection(node, apiKey, connector.id, { name: "x" })
    const before = target.requests.length
    const response = await invoke(node, apiKey, connector.id, conn.id, "admin")
    expect(response.status).toBe(422)
    expect((await response.json()).error.code).toBe("path_outside_server_url")
    expect(target.requests.length).toBe(before)
  })
})
