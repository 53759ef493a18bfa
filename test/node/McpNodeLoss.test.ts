import { afterAll, describe, expect, it } from "vitest"
import { mcpPost, obtainTokens, openSession, setPassword } from "../mcp/support.js"
import { bootstrapOrg } from "../support/Bootstrap.js"
import { type Cluster, startCluster } from "../support/ClusterHarness.js"
import { freePort } from "../support/ports.js"
import { migratedDatabase } from "../support/TestDatabase.js"
import type { TestNode } from "../support/TestNode.js"
import { testEnvironment } from "../support/TestNode.js"

let cluster: Cluster | undefined
afterAll(() => cluster?.stop())

describe("an MCP session while a node dies", () => {
  it("goes on through the load balancer on the nodes left", async () => {
    const proxyPort = await freePort()
    const publicUrl = `http://127.0.0.1:${proxyPort}`
    const env = await testEnvironment({ DATABASE_URL: await migratedDatabase(), SWITCHYARD_PUBLIC_URL: publicUrl })
    let apiKey: string, user_id: string
    ;[cluster, { api_key: apiKey, user_id }] = await Promise.all([
      startCluster({ nodes: 3, env, proxyPort }),
      bootstrapOrg(env, "Sessions", "s@o.test")
    ])
    expect(user_id).toBeDefined()
    await setPassword({ databaseUrl: env.DATABASE_URL } as TestNode, "s@o.test", "correct horse battery staple")
    // the OAuth flow and the session, all through the round-robin proxy
    const viaProxy = {
      baseUrl: publicUrl,
      databaseUrl: env.DATABASE_URL,
      fetch: (path: string, init?: RequestInit) => fetch(publicUrl + path, init)
    } as unknown as TestNode
    const token = (await obtainTokens(viaProxy, "s@o.test")).tokens.access_token
    const session = await openSession(publicUrl, token)
    const headers = {
      authorization: `Bearer ${token}`,
      "mcp-session-id": session,
      "mcp-protocol-version": "2025-11-25"
    }
    const listAgents = async () => {
      const response = await mcpPost(publicUrl, {
        jsonrpc: "2.0",
        id: 3,
        method: "tools/call",
        params: { name: "list_agents", arguments: {} }
      }, headers)
      return { status: response.status, body: await response.json() }
    }
    await fetch(`${publicUrl}/v1/agents`, {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ name: "Survivor", model: { provider: "scripted", script: [{ text: "hi" }] } })
    })
    // every node serves the session in turn
    for (let i = 0; i < 3; i++) expect((await listAgents()).status).toBe(200)
    await cluster.kill(1)
    const after = await Promise.all(Array.from({ length: 6 }, listAgents))
    expect(after.map((a) => a.status)).toEqual(Array(6).fill(200))
    expect(after[0]!.body.result.structuredContent.items.map((a: any) => a.name)).toEqual(["Survivor"])
  }, 120_000)
})
