import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { signedUpAdmin, signInAndConsent, TestOAuthProvider } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

describe("the MCP SDK's own client against a real node", () => {
  it("runs 401 → discovery → registration → sign-in and consent → token → initialize → tools → invoke_agent", async () => {
    const admin = await signedUpAdmin(node)
    const agent = await createAgent(node, admin.api_key, {
      name: "Greeter",
      model: { provider: "scripted", script: [{ text: "Hello from the agent." }] }
    })
    const url = new URL(`${node.baseUrl}/mcp/`)
    const provider = new TestOAuthProvider()
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
    await expect(new Client({ name: "test", version: "1.0.0" }).connect(first)).rejects.toThrow(/Unauthorized/)
    expect(provider.client?.client_id).toMatch(/^sy_client_/)
    const authorizationUrl = provider.authorizationUrl!
    expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256")
    expect(authorizationUrl.searchParams.get("resource")).toBe(url.toString())

    const { consentHtml, location } = await signInAndConsent(authorizationUrl.toString(), admin.email)
    expect(consentHtml).toContain("Test MCP client")
    expect(consentHtml).toContain(admin.email)
    expect(consentHtml).toContain("http://127.0.0.1:53682/callback")
    expect(consentHtml).toContain("loopback")
    const redirect = new URL(location)
    expect(redirect.searchParams.get("state")).toBe(authorizationUrl.searchParams.get("state"))
    await first.finishAuth(redirect.searchParams.get("code")!)
    expect(provider.saved?.access_token).toMatch(/^sy_at_/)

    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
    expect(client.getServerVersion()?.name).toBe("Switchyard MCP")
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining([
      "list_agents",
      "get_agent",
      "invoke_agent",
      "get_task",
      "list_tasks",
      "cancel_task",
      "get_task_thread",
      "get_task_usage",
      "search_connectors",
      "list_operations",
      "get_operation_schema",
      "invoke_operation"
    ]))
    const invoke = tools.find((t) => t.name === "invoke_agent")!
    expect(invoke.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false })
    expect(invoke.inputSchema.required).toEqual(["agent_id", "text"])

    const answer = await client.callTool({ name: "invoke_agent", arguments: { agent_id: agent.id, text: "Hi" } })
    expect(answer.isError).toBeFalsy()
    const task = answer.structuredContent as { id: string; status: string; result: string; source: string }
    expect(task).toMatchObject({ status: "completed", result: "Hello from the agent.", source: "mcp" })
    expect((answer.content as Array<{ text: string }>)[0]!.text).toContain(task.id)

    const overRest = await (await node.fetch(`/v1/tasks/${task.id}`, { apiKey: admin.api_key })).json()
    expect(overRest).toMatchObject({ id: task.id, status: "completed", source: "mcp", user: { email: admin.email } })
    await client.close()
  })
})
