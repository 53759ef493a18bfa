import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { signedUpAdmin, signInAndConsent, TestOAuthProvider } from "./support.js"

let nodes: Array<TestNode> = []
beforeAll(async () => {
  const first = await startTestNode()
  // the second node shares the database and the public URL, as nodes behind one load balancer do
  const second = await startTestNode({ DATABASE_URL: first.databaseUrl, SWITCHYARD_PUBLIC_URL: first.baseUrl })
  nodes = [first, second]
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
})

describe("two nodes on one database, no sticky sessions", () => {
  it("continue an MCP session started on one node on the other, request by request", async () => {
    const admin = await signedUpAdmin(nodes[0]!)
    const agent = await createAgent(nodes[0]!, admin.api_key, {
      name: "Anywhere",
      model: { provider: "scripted", script: [{ text: "answered" }] }
    })
    const publicUrl = nodes[0]!.baseUrl
    const served = [0, 0]
    let next = 0
    // a round-robin load balancer in front of both nodes: consecutive requests land on different nodes
    const balanced: typeof fetch = (input, init) => {
      const index = next++ % 2
      const url = new URL(input instanceof Request ? input.url : input.toString())
      if (url.origin === publicUrl && url.pathname.startsWith("/mcp")) served[index]!++
      return fetch(nodes[index]!.baseUrl + url.pathname + url.search, init)
    }
    const mcpUrl = new URL(`${publicUrl}/mcp/`)
    const provider = new TestOAuthProvider()
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: balanced })
    await expect(new Client({ name: "lb", version: "1" }).connect(first)).rejects.toThrow(/Unauthorized/)
    const { location } = await signInAndConsent(provider.authorizationUrl!.toString(), admin.email)
    await first.finishAuth(new URL(location).searchParams.get("code")!)

    const client = new Client({ name: "lb", version: "1" })
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider, fetch: balanced })
    await client.connect(transport)
    const session = transport.sessionId
    expect(session).toBeDefined()
    for (let i = 0; i < 3; i++) expect((await client.listTools()).tools.length).toBeGreaterThan(10)
    const answer = await client.callTool({ name: "invoke_agent", arguments: { agent_id: agent.id, text: "hi" } })
    expect(answer.structuredContent).toMatchObject({ status: "completed", result: "answered" })
    expect(transport.sessionId).toBe(session)
    expect(served[0]).toBeGreaterThan(1)
    expect(served[1]).toBeGreaterThan(1)
    await transport.terminateSession()
    await client.close()
  })
})
