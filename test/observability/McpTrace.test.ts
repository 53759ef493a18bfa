import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { obtainTokens, openSession, signedUpAdmin } from "../mcp/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { eventually, startOtlpReceiver } from "./support.js"

// MCP's fast path answers a `tools/call` of invoke_operation without a fiber (McpProtocol.fastAnswer): the
// caller's traceparent must reach the connector call there too, as it does on the general route
describe("an MCP tools/call on the fast path, with tracing on", () => {
  let target: TargetServer
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>
  let node: TestNode

  beforeAll(async () => {
    target = await startTargetServer()
    receiver = await startOtlpReceiver()
    node = await startTestNode({
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50"
    })
  })
  afterAll(async () => {
    await node?.stop()
    await receiver?.close()
    await target?.close()
  })

  it("puts the connector call under the caller's span (traceparent)", async () => {
    const admin = await signedUpAdmin(node)
    const token = (await obtainTokens(node, admin.email)).tokens.access_token
    const session = await openSession(node.baseUrl, token)
    const connector = await createConnector(node, admin.api_key, petstore(target.url))
    const connection = await createConnection(node, admin.api_key, connector.id, {
      name: "main",
      credentials: { type: "api_key", value: "secret-123" }
    })
    const call = (id: number, headers: Record<string, string> = {}) =>
      fetch(`${node.baseUrl}/mcp/`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${token}`,
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-11-25",
          ...headers
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: {
            name: "invoke_operation",
            arguments: { connector_id: connector.id, connection_id: connection.id, operation_id: "listPets" }
          }
        })
      }).then(async (r) => ({ status: r.status, body: await r.json() }))
    // the token, the session and the connection in the node's memory: the fast path takes what follows
    expect((await call(1)).status).toBe(200)

    const traceId = "5b8efff798038103d269b633813fc60c"
    const callerSpanId = "eee19b7ec3c1b174"
    const answered = await call(2, { traceparent: `00-${traceId}-${callerSpanId}-01` })
    expect(answered.status).toBe(200)
    expect(answered.body.result.isError).not.toBe(true)
    const span = await eventually(() =>
      receiver.spans.find((s) => s.name === "connector listPets" && s.traceId === traceId)
    )
    // right under the caller's span: no request span between (the general route would have one)
    expect(span.parentSpanId).toBe(callerSpanId)
  })
})
