import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call } from "../access/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { mcpPost, obtainTokens, openSession, signedUpAdmin } from "../mcp/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"

let node: TestNode
let target: TargetServer
beforeAll(async () => {
  node = await startTestNode({ SWITCHYARD_EGRESS_ALLOW: "127.0.0.1" })
  target = await startTargetServer()
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
})

describe("approvals over MCP", () => {
  it("an admin lists the waiting request and approves it with the MCP tools; the task goes on", async () => {
    const admin = await signedUpAdmin(node)
    const key = admin.api_key
    const connector = await createConnector(node, key, petstore(target.url))
    const connection = await createConnection(node, key, connector.id, {
      name: "pets",
      credentials: { type: "api_key", value: "k" }
    })
    const skill = await call(node, key, "POST", "/v1/skills", {
      name: "Guarded delete",
      visibility: "organization",
      actions: [{ connection_id: connection.id, operation_id: "deletePet", requires_approval: true }]
    })
    await call(node, key, "POST", `/v1/skills/${skill.body.id}/publish`)
    const agent = await call(node, key, "POST", "/v1/agents", {
      name: "remover",
      model: {
        provider: "scripted",
        script: [{ tool_calls: [{ name: "deletePet", arguments: { path_params: { petId: "9" } } }] }, { text: "done" }]
      }
    })
    await call(node, key, "PUT", `/v1/agents/${agent.body.id}/skills/${skill.body.id}`)
    const accepted = await call(node, key, "POST", `/v1/agents/${agent.body.id}/invoke?asynchronous=true`, {
      input: { text: "remove 9", user: { id: "u", email: "u@example.com" } }
    })

    const token = (await obtainTokens(node, admin.email)).tokens.access_token
    const session = await openSession(node.baseUrl, token)
    const tool = async (name: string, args: unknown) => {
      const response = await mcpPost(node.baseUrl, {
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name, arguments: args }
      }, { authorization: `Bearer ${token}`, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
      return (await response.json()).result
    }
    let pending: any
    for (let i = 0; i < 100 && pending === undefined; i++) {
      pending = (await tool("list_approvals", { status: "pending", task_id: accepted.body.id })).structuredContent
        .items[0]
      if (pending === undefined) await new Promise((r) => setTimeout(r, 50))
    }
    expect(pending).toMatchObject({ tool: "deletePet", status: "pending" })
    expect(target.requests.some((r) => r.method === "DELETE")).toBe(false)
    const decided = await tool("decide_approval", { approval_id: pending.id, decision: "approve" })
    expect(decided.structuredContent.status).toBe("approved")
    const done = await (await node.fetch(`/v1/tasks/${accepted.body.id}?wait=20`, { apiKey: key })).json()
    expect(done.status).toBe("completed")
    expect(target.requests.filter((r) => r.method === "DELETE" && r.path === "/pets/9")).toHaveLength(1)
  })
})
