import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { auditEvents, call } from "../access/support.js"
import { createAgent } from "../agents/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import {
  initialize,
  mcpPost,
  obtainTokens,
  PASSWORD,
  signedUpAdmin,
  signInAndConsent,
  TestOAuthProvider,
  token
} from "./support.js"

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

describe("the MCP SDK's client given the endpoint without its trailing slash", () => {
  it("signs in for http://127.0.0.1:<port>/mcp, connects there and calls a tool", async () => {
    const admin = await signedUpAdmin(node)
    const url = new URL(`${node.baseUrl}/mcp`)
    expect(url.toString()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    const provider = new TestOAuthProvider()
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
    // the SDK stops here, before sign-in, unless the metadata names a resource its URL falls under
    await expect(new Client({ name: "test", version: "1.0.0" }).connect(first)).rejects.toThrow(/Unauthorized/)
    const authorizationUrl = provider.authorizationUrl!
    expect(authorizationUrl).toBeDefined()
    expect(authorizationUrl.searchParams.get("resource")).toBe(url.toString())

    const { location } = await signInAndConsent(authorizationUrl.toString(), admin.email)
    await first.finishAuth(new URL(location).searchParams.get("code")!)
    expect(provider.saved?.access_token).toMatch(/^sy_at_/)

    const client = new Client({ name: "test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
    expect(client.getServerVersion()?.name).toBe("Switchyard MCP")
    const answer = await client.callTool({ name: "list_agents", arguments: {} })
    expect(answer.isError).toBeFalsy()
    expect(answer.structuredContent).toMatchObject({ items: [] })
    await client.close()
  })
})

describe("without SWITCHYARD_MCP_PUBLIC_URL", () => {
  it("the built-in agent's endpoint and its metadata answer 404", async () => {
    expect((await fetch(`${node.baseUrl}/switchyard-mcp/`, { method: "POST" })).status).toBe(404)
    expect((await fetch(`${node.baseUrl}/.well-known/oauth-protected-resource/switchyard-mcp`)).status).toBe(404)
  })
})

describe("switchyard users set-password", () => {
  const setPassword = (email: string, password: string) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [
        Path.resolve(import.meta.dirname, "../../bin/switchyard.js"),
        "users",
        "set-password",
        "--email",
        email
      ], {
        env: {
          ...process.env,
          DATABASE_URL: node.databaseUrl,
          SWITCHYARD_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
          SWITCHYARD_LOG_LEVEL: "warning"
        },
        stdio: ["pipe", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (c) => (output += c))
      child.stderr.on("data", (c) => (output += c))
      child.stdin.end(`${password}\n`)
      child.on("exit", (code) => resolve({ code, output }))
    })

  it("sets a password from standard input, with which the person can then sign in", async () => {
    const created = await node.bootstrap()
    const email = (await (await node.fetch("/v1/me", { apiKey: created.api_key })).json()).user.email
    const short = await setPassword(email, "short")
    expect(short.code).toBe(2)
    expect(short.output).toBe("error: the password (read from standard input) needs 8+ characters\n")
    const set = await setPassword(email, "a long enough password")
    expect(set.code).toBe(0)
    expect(set.output).toContain(email)
    // audited in the person's organization, without the password
    const records = (await auditEvents(node, created.organization_id)).filter((e) => e.action === "SET_PASSWORD")
    expect(records).toEqual([expect.objectContaining({
      actor_type: "system",
      actor_id: "cli",
      outcome: "success",
      targets: [{ type: "user", id: created.user_id, name: email }],
      details: { sessions_ended: 0, revoked_authorizations: [] }
    })])
    const { tokens } = await obtainTokens(node, email, { password: "a long enough password" })
    expect(tokens.access_token).toMatch(/^sy_at_/)
    expect((await setPassword("nobody@example.com", "a long enough password")).code).toBe(1)
  })

  it("a new password ends the sessions signed in with a password before it (a reset after a leak works)", async () => {
    const admin = await signedUpAdmin(node)
    const signIn = async (password: string) => {
      const response = await fetch(`${node.baseUrl}/console/api/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: node.baseUrl },
        body: JSON.stringify({ email: admin.email, password })
      })
      return { status: response.status, cookie: response.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ") }
    }
    const session = (cookie: string) => fetch(`${node.baseUrl}/console/api/session`, { headers: { cookie } })
    const before = [await signIn(PASSWORD), await signIn(PASSWORD)]
    for (const s of before) expect((await session(s.cookie)).status).toBe(200)
    // an MCP client authorized with the old password (its sign-in page session is a third one)
    const mcp = await obtainTokens(node, admin.email)
    const reset = await setPassword(admin.email, "a brand new password")
    expect(reset.code).toBe(0)
    expect(reset.output).toContain("3 sessions signed in with the old password ended")
    expect(reset.output).toContain("1 MCP authorization given with it revoked")
    // the client must ask the person again: its refresh token and access token no longer work
    const refreshed = await token(node, {
      grant_type: "refresh_token",
      refresh_token: mcp.tokens.refresh_token,
      client_id: mcp.client.client_id
    })
    expect(refreshed.status).toBe(400)
    expect(refreshed.body.error).toBe("invalid_grant")
    const mcpCall = await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${mcp.tokens.access_token}` })
    expect(mcpCall.status).toBe(401)
    for (const s of before) expect((await session(s.cookie)).status).toBe(401)
    // the old password no longer signs in; the new one does, and its session lasts
    expect((await signIn(PASSWORD)).status).toBe(401)
    const after = await signIn("a brand new password")
    expect((await session(after.cookie)).status).toBe(200)
    const records = (await auditEvents(node, admin.organization_id)).filter((e) => e.action === "SET_PASSWORD")
    const grants = (await call(node, admin.api_key, "GET", "/v1/oauth/authorizations?user_id=" + admin.user_id)).body
    expect(records.map((e) => e.details)).toEqual([{ sessions_ended: 3, revoked_authorizations: [grants.items[0].id] }])
    expect(grants.items[0].revoked_at).not.toBeNull()
  })
})
