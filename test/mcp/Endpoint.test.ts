import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent } from "../agents/support.js"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { freePort } from "../support/ports.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { initialize, mcpPost, obtainTokens, openSession, signedUpAdmin, token } from "./support.js"

let node: TestNode
let target: TargetServer
let admin: Awaited<ReturnType<typeof signedUpAdmin>>
let accessToken: string
let bearer: Record<string, string>
beforeAll(async () => {
  const port = String(await freePort())
  const url = `http://127.0.0.1:${port}`
  // the built-in agent's endpoint is served once SWITCHYARD_MCP_PUBLIC_URL says where it is public
  node = await startTestNode({
    SWITCHYARD_HTTP_PORT: port,
    SWITCHYARD_PUBLIC_URL: url,
    SWITCHYARD_MCP_PUBLIC_URL: url,
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1"
  })
  target = await startTargetServer()
  admin = await signedUpAdmin(node)
  accessToken = (await obtainTokens(node, admin.email)).tokens.access_token
  bearer = { authorization: `Bearer ${accessToken}` }
})
afterAll(async () => {
  await node?.stop()
  await target?.close()
})

const call = (session: string, name: string, args: unknown, headers: Record<string, string> = bearer) =>
  mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name, arguments: args } }, {
    ...headers,
    "mcp-session-id": session,
    "mcp-protocol-version": "2025-11-25"
  })

describe("authentication of /mcp/", () => {
  const metadata = () => `resource_metadata="${node.baseUrl}/.well-known/oauth-protected-resource"`

  it("answers no token with 401 pointing at the resource metadata", async () => {
    const response = await mcpPost(node.baseUrl, initialize)
    expect(response.status).toBe(401)
    expect(response.headers.get("www-authenticate")).toContain(`Bearer ${metadata()}`)
    expect((await response.json()).error.code).toBe("missing_token")
  })

  it("refuses x-api-key, even a valid one", async () => {
    const response = await mcpPost(node.baseUrl, initialize, { "x-api-key": admin.api_key })
    expect(response.status).toBe(401)
    expect(response.headers.get("www-authenticate")).toContain(metadata())
    expect((await response.json()).error.code).toBe("api_key_not_accepted")
  })

  it("refuses unknown tokens and API keys sent as bearer tokens", async () => {
    for (const token of ["sy_at_nope", admin.api_key]) {
      const response = await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${token}` })
      expect(response.status).toBe(401)
      expect(response.headers.get("www-authenticate")).toContain(`error="invalid_token"`)
    }
  })

  it("refuses a revoked access token with a message true of a revoked token, and its refresh token still works", async () => {
    const { client, tokens } = await obtainTokens(node, admin.email)
    const own = { authorization: `Bearer ${tokens.access_token}` }
    expect((await mcpPost(node.baseUrl, initialize, own)).status).toBe(200)
    const revoked = await fetch(`${node.baseUrl}/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: tokens.access_token, client_id: client.client_id }).toString()
    })
    expect(revoked.status).toBe(200)
    const refused = await mcpPost(node.baseUrl, initialize, own)
    expect(refused.status).toBe(401)
    const message = "The access token is expired or was revoked; refresh it."
    expect((await refused.json()).error).toMatchObject({ code: "invalid_token", message })
    expect(refused.headers.get("www-authenticate")).toContain(`error_description="${message}"`)
    // revoking an access token leaves its authorization: refreshing gives a working one, as the message says
    const refreshed = await token(node, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id
    })
    expect(refreshed.status).toBe(200)
    const again = { authorization: `Bearer ${refreshed.body.access_token}` }
    expect((await mcpPost(node.baseUrl, initialize, again)).status).toBe(200)
  })

  it("refuses a token issued for another resource (the built-in agent's endpoint)", async () => {
    const other = (await obtainTokens(node, admin.email, { resource: `${node.baseUrl}/switchyard-mcp/` })).tokens
    const onMcp = await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${other.access_token}` })
    expect(onMcp.status).toBe(401)
    const onItsOwn = await mcpPost(
      node.baseUrl,
      initialize,
      { authorization: `Bearer ${other.access_token}` },
      "/switchyard-mcp/"
    )
    expect(onItsOwn.status).toBe(200)
    expect((await onItsOwn.json()).result.serverInfo.name).toBe("Switchyard agent MCP")
    const ours = await mcpPost(node.baseUrl, initialize, bearer, "/switchyard-mcp/")
    expect(ours.status).toBe(401)
    expect(ours.headers.get("www-authenticate")).toContain("/.well-known/oauth-protected-resource/switchyard-mcp")
  })

  it("takes /switchyard-mcp and /switchyard-mcp/ as one resource, each pointed at metadata naming its form", async () => {
    for (const path of ["/switchyard-mcp/", "/switchyard-mcp"]) {
      const challenged = await mcpPost(node.baseUrl, initialize, {}, path)
      expect(challenged.status).toBe(401)
      const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenged.headers.get("www-authenticate")!)![1]!
      expect(metadataUrl).toBe(`${node.baseUrl}/.well-known/oauth-protected-resource${path}`)
      expect((await (await fetch(metadataUrl)).json()).resource).toBe(`${node.baseUrl}${path}`)
    }
    const bare = (await obtainTokens(node, admin.email, { resource: `${node.baseUrl}/switchyard-mcp` })).tokens
    for (const path of ["/switchyard-mcp/", "/switchyard-mcp"]) {
      const answer = await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${bare.access_token}` }, path)
      expect({ path, status: answer.status }).toEqual({ path, status: 200 })
    }
    // still another resource than /mcp/
    expect((await mcpPost(node.baseUrl, initialize, { authorization: `Bearer ${bare.access_token}` })).status).toBe(401)
  })

  it("refuses a foreign Origin and an unsupported protocol version", async () => {
    const foreign = await mcpPost(node.baseUrl, initialize, { ...bearer, origin: "https://evil.example" })
    expect(foreign.status).toBe(403)
    const session = await openSession(node.baseUrl, accessToken)
    const old = await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 2, method: "ping" }, {
      ...bearer,
      "mcp-session-id": session,
      "mcp-protocol-version": "2024-01-01"
    })
    expect(old.status).toBe(400)
    expect((await old.json()).error.code).toBe("unsupported_protocol_version")
    const same = await mcpPost(node.baseUrl, initialize, { ...bearer, origin: node.baseUrl })
    expect(same.status).toBe(200)
  })
})

describe("sessions", () => {
  it("negotiates the protocol version and names the server", async () => {
    const response = await mcpPost(node.baseUrl, {
      ...initialize,
      params: { ...initialize.params, protocolVersion: "2025-06-18" }
    }, bearer)
    const body = await response.json()
    expect(body.result).toMatchObject({ protocolVersion: "2025-06-18", serverInfo: { name: "Switchyard MCP" } })
    expect(response.headers.get("mcp-session-id")).toMatch(/^mcp_[A-Za-z0-9_-]{43}$/)
    // a version we do not speak gets our newest, for the client to accept or leave
    for (const asked of ["2024-11-05", "2099-01-01"]) {
      const other = await mcpPost(node.baseUrl, {
        ...initialize,
        params: { ...initialize.params, protocolVersion: asked }
      }, bearer)
      expect((await other.json()).result.protocolVersion).toBe("2025-11-25")
    }
    for (
      const [protocolVersion, message] of [
        [
          undefined,
          "`params.protocolVersion` is missing: name the MCP version the client speaks, e.g. \"2025-11-25\"."
        ],
        [5, "`params.protocolVersion` must be a string, not a number."]
      ] as const
    ) {
      const refused = await mcpPost(node.baseUrl, {
        ...initialize,
        params: { ...initialize.params, protocolVersion }
      }, bearer)
      expect(refused.status).toBe(200)
      expect(refused.headers.get("mcp-session-id")).toBeNull()
      expect((await refused.json()).error).toEqual({ code: -32602, message })
    }
  })

  it("are bound to the user: another user's session id is not found", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    const other = await signedUpAdmin(node)
    const theirs = (await obtainTokens(node, other.email)).tokens.access_token
    const response = await call(session, "list_agents", {}, { authorization: `Bearer ${theirs}` })
    expect(response.status).toBe(404)
    expect((await response.json()).error.code).toBe("session_not_found")
  })

  it("need a session id after initialize, and end with DELETE", async () => {
    const missing = await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 2, method: "tools/list" }, bearer)
    expect(missing.status).toBe(400)
    const session = await openSession(node.baseUrl, accessToken)
    expect((await call(session, "list_agents", {})).status).toBe(200)
    const ended = await fetch(`${node.baseUrl}/mcp/`, {
      method: "DELETE",
      headers: { ...bearer, "mcp-session-id": session }
    })
    expect(ended.status).toBe(204)
    expect((await call(session, "list_agents", {})).status).toBe(404)
  })

  it("offers the server-to-client event stream on GET", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    const controller = new AbortController()
    const response = await fetch(`${node.baseUrl}/mcp/`, {
      headers: { ...bearer, "mcp-session-id": session, accept: "text/event-stream" },
      signal: controller.signal
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    // it opens at once (a reconnection hint and a comment), and stays open for keep-alives
    const reader = response.body!.getReader()
    let text = ""
    while (!text.includes(": stream open\n\n")) text += new TextDecoder().decode((await reader.read()).value)
    expect(text).toMatch(/^retry: \d+\n\n: stream open\n\n/)
    controller.abort()
    // Accept read as everywhere else: an event stream refused with q=0 is not accepted
    for (const accept of ["application/json", "text/event-stream;q=0"]) {
      const refused = await fetch(`${node.baseUrl}/mcp/`, { headers: { ...bearer, "mcp-session-id": session, accept } })
      expect(refused.status).toBe(406)
      expect((await refused.json()).error.code).toBe("not_acceptable")
    }
  })

  it("of 2025-03-26 take JSON-RPC batches, answered in one array; later versions refuse them", async () => {
    const opened = await mcpPost(node.baseUrl, {
      ...initialize,
      params: { ...initialize.params, protocolVersion: "2025-03-26" }
    }, bearer)
    expect((await opened.json()).result.protocolVersion).toBe("2025-03-26")
    // a client of 2025-03-26 may not send MCP-Protocol-Version; one that does is served
    const headers = {
      ...bearer,
      "mcp-session-id": opened.headers.get("mcp-session-id")!,
      "mcp-protocol-version": "2025-03-26"
    }
    const answered = await mcpPost(node.baseUrl, [
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_task", arguments: { task_id: "x" } } },
      { jsonrpc: "2.0", id: 3, method: "nope" },
      { jsonrpc: "2.0", id: 4, method: "initialize", params: initialize.params },
      { jsonrpc: "1.0", id: 5, method: "ping" }
    ], headers)
    expect(answered.status).toBe(200)
    const responses = await answered.json()
    expect(responses.map((r: { id: unknown }) => r.id)).toEqual([1, 2, 3, 4, 5])
    expect(responses[0].result).toEqual({})
    expect(responses[1].result.structuredContent.error.code).toBe("validation_failed")
    expect(responses.slice(2).map((r: any) => r.error.code)).toEqual([-32601, -32600, -32600])
    const notes = await mcpPost(node.baseUrl, [{ jsonrpc: "2.0", method: "notifications/initialized" }], headers)
    expect(notes.status).toBe(202)
    const empty = await mcpPost(node.baseUrl, [], headers)
    expect(empty.status).toBe(400)
    expect((await empty.json()).error).toEqual({ code: -32600, message: "An empty batch: send at least one message." })
    const pings = Array.from({ length: 101 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "ping" }))
    const many = await mcpPost(node.baseUrl, pings, headers)
    expect(many.status).toBe(400)
    expect((await many.json()).error.message).toBe("A batch holds at most 100 messages, not 101: send them in several.")
    // a tool beyond the token's scope refuses the whole batch, as it refuses a single call
    const readOnly = (await obtainTokens(node, admin.email, { scope: "mcp:read" })).tokens.access_token
    const reader = { authorization: `Bearer ${readOnly}` }
    const readSession = await mcpPost(node.baseUrl, {
      ...initialize,
      params: { ...initialize.params, protocolVersion: "2025-03-26" }
    }, reader)
    const scoped = await mcpPost(node.baseUrl, [
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_agents", arguments: {} } },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "cancel_task", arguments: { task_id: "x" } } }
    ], { ...reader, "mcp-session-id": readSession.headers.get("mcp-session-id")! })
    expect(scoped.status).toBe(403)
    expect((await scoped.json()).error.code).toBe("insufficient_scope")

    const session = await openSession(node.baseUrl, accessToken)
    const refused = await mcpPost(node.baseUrl, [{ jsonrpc: "2.0", id: 1, method: "ping" }], {
      ...bearer,
      "mcp-session-id": session
    })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32600,
        message: "A message is one JSON-RPC object: batches are part of MCP 2025-03-26 only, and this session " +
          "speaks 2025-11-25."
      }
    })
  })

  it("end their open GET streams with DELETE", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    const headers = { ...bearer, "mcp-session-id": session }
    const streams = await Promise.all(
      [1, 2].map(() => fetch(`${node.baseUrl}/mcp/`, { headers: { ...headers, accept: "text/event-stream" } }))
    )
    const readers = streams.map((response) => response.body!.getReader())
    for (const reader of readers) await reader.read()
    const ended = await fetch(`${node.baseUrl}/mcp/`, { method: "DELETE", headers })
    expect(ended.status).toBe(204)
    // each stream ends (a heartbeat may come first); were it left open, this would wait for GET_STREAM_MAX_MS
    for (const reader of readers) while (!(await reader.read()).done);
    const opened = await fetch(`${node.baseUrl}/mcp/`, { headers: { ...headers, accept: "text/event-stream" } })
    expect(opened.status).toBe(404)
    expect((await opened.json()).error.code).toBe("session_not_found")
  })

  it("answers notifications with 202 and unknown methods with a JSON-RPC error", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    const headers = { ...bearer, "mcp-session-id": session }
    const note = await mcpPost(node.baseUrl, { jsonrpc: "2.0", method: "notifications/initialized" }, headers)
    expect(note.status).toBe(202)
    const unknown = await (await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 3, method: "nope" }, headers)).json()
    expect(unknown.error.code).toBe(-32601)
    const ping = await (await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: "p", method: "ping" }, headers)).json()
    expect(ping).toEqual({ jsonrpc: "2.0", id: "p", result: {} })
    // tools/list is one page: it gives no nextCursor, so a cursor sent is not one of ours
    const listed =
      (await (await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 4, method: "tools/list" }, headers)).json())
        .result
    expect(listed.nextCursor).toBeUndefined()
    const paged = await mcpPost(node.baseUrl, {
      jsonrpc: "2.0",
      id: 5,
      method: "tools/list",
      params: { cursor: "abc" }
    }, headers)
    expect((await paged.json()).error).toEqual({
      code: -32602,
      message: "Unknown cursor: tools/list answers every tool at once (no nextCursor); call it without one."
    })
    const junk = await fetch(`${node.baseUrl}/mcp/`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: "{"
    })
    expect(junk.status).toBe(400)
  })
})

describe("tools", () => {
  it("run with the token's user: agents, tasks and connectors, on the same code path as REST", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    const agent = await createAgent(node, admin.api_key, {
      name: "Echo",
      model: { provider: "scripted", script: [{ text: "done" }] }
    })
    const listed = await (await call(session, "list_agents", {})).json()
    expect(listed.result.structuredContent.items.map((a: { id: string }) => a.id)).toContain(agent.id)
    const invoked = (await (await call(session, "invoke_agent", { agent_id: agent.id, text: "go", asynchronous: true }))
      .json()).result
    expect(invoked.structuredContent).toMatchObject({ status: "pending", source: "mcp" })
    const taskId = invoked.structuredContent.id
    const got = (await (await call(session, "get_task", { task_id: taskId, wait: 10 })).json()).result
    expect(got.structuredContent).toMatchObject({ id: taskId, status: "completed", result: "done" })
    const thread = (await (await call(session, "get_task_thread", { task_id: taskId })).json()).result
    expect(thread.structuredContent.events[0]).toMatchObject({ type: "user_message", user: { email: admin.email } })

    const connector = await createConnector(node, admin.api_key, petstore(target.url))
    const connection = await createConnection(node, admin.api_key, connector.id, {
      name: "pets",
      credentials: { type: "api_key", value: "k-mcp" }
    })
    const found = (await (await call(session, "search_connectors", { query: "pet" })).json()).result
    expect(found.structuredContent.items[0].id).toBe(connector.id)
    const schema = (await (await call(session, "get_operation_schema", {
      connector_id: "_",
      connection_id: connection.id,
      operation_id: "createPet"
    })).json()).result
    expect(schema.structuredContent.input.required).toEqual(["body_params"])
    const created = (await (await call(session, "invoke_operation", {
      connector_id: connector.id,
      connection_id: connection.id,
      operation_id: "createPet",
      body_params: { name: "Rex" }
    })).json()).result
    expect(created.structuredContent).toMatchObject({ status: 200, body: { method: "POST", path: "/pets" } })
    expect(target.requests.at(-1)!.headers["x-api-key"]).toBe("k-mcp")
  })

  it("list_agents pages with limit and cursor as GET /v1/agents does", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    for (const name of ["Paged 1", "Paged 2"]) {
      await createAgent(node, admin.api_key, { name, model: { provider: "scripted", script: [{ text: "done" }] } })
    }
    const rest = await (await node.fetch("/v1/agents", { apiKey: admin.api_key })).json()
    const all = (await (await call(session, "list_agents", {})).json()).result.structuredContent
    expect(all).toEqual(JSON.parse(JSON.stringify(rest)))
    const ids: Array<string> = []
    let cursor: string | null = null
    do {
      const args: Record<string, unknown> = cursor === null ? { limit: 1 } : { limit: 1, cursor }
      const page: any = (await (await call(session, "list_agents", args)).json()).result.structuredContent
      expect(page.total).toBe(rest.total)
      ids.push(...page.items.map((a: { id: string }) => a.id))
      cursor = page.next_cursor
    } while (cursor !== null)
    expect(ids).toEqual(rest.items.map((a: { id: string }) => a.id))
    const bad = (await (await call(session, "list_agents", { cursor: "zz" })).json()).result
    expect(bad.isError).toBe(true)
    expect(bad.structuredContent.error.code).toBe("invalid_cursor")
  })

  it("report bad arguments and refusals as tool errors with the REST error codes", async () => {
    const session = await openSession(node.baseUrl, accessToken)
    const bad = (await (await call(session, "get_task", { task_id: "not-a-uuid" })).json()).result
    expect(bad.isError).toBe(true)
    expect(bad.structuredContent.error.code).toBe("validation_failed")
    // an id of another JSON type is named as sent, not as String() shows it ("" for [], "[object Object]")
    for (const [sent, shown] of [[[], "[]"], [{ a: 1 }, "{\"a\":1}"], [7, "7"], [null, "null"]] as const) {
      const typed = (await (await call(session, "get_task", { task_id: sent })).json()).result
      expect(typed.structuredContent.error.message).toBe(`\`task_id\`: must be the id of a task (a UUID), not ${shown}`)
    }
    const extra = (await (await call(session, "get_task", { task_id: crypto.randomUUID(), surprise: 1 })).json()).result
    expect(extra.isError).toBe(true)
    // an optional argument out of range is that issue alone, not also "Expected undefined" (as on REST)
    const range = (await (await call(session, "get_task", { task_id: crypto.randomUUID(), wait: 61 })).json()).result
    expect(range.structuredContent.error.code).toBe("validation_failed")
    expect(range.structuredContent.error.details.issues).toHaveLength(1)
    expect(range.structuredContent.error.message).toMatch(/^`wait`: /)
    expect(range.structuredContent.error.message).not.toContain("Expected undefined")
    const missing = (await (await call(session, "get_task", { task_id: crypto.randomUUID() })).json()).result
    expect(missing.structuredContent.error.code).toBe("not_found")
    const unknown = await (await call(session, "no_such_tool", {})).json()
    expect(unknown.error.code).toBe(-32602)
    expect(unknown.error.message).toBe("Unknown tool: no_such_tool; tools/list lists them.")
    for (
      const [params, message] of [
        [{}, "`params.name` is missing: name the tool to call (tools/list lists them)."],
        [{ name: 5 }, "`params.name` must be a tool's name (a string), not a number."]
      ] as const
    ) {
      const unnamed = await (await mcpPost(node.baseUrl, { jsonrpc: "2.0", id: 9, method: "tools/call", params }, {
        authorization: `Bearer ${accessToken}`,
        "mcp-session-id": session
      })).json()
      expect(unnamed.error).toEqual({ code: -32602, message })
    }
  })

  it("need the write scope to change anything: 403 insufficient_scope", async () => {
    const readOnly = (await obtainTokens(node, admin.email, { scope: "mcp:read" })).tokens.access_token
    const session = await openSession(node.baseUrl, readOnly)
    const headers = { authorization: `Bearer ${readOnly}` }
    expect((await call(session, "list_agents", {}, headers)).status).toBe(200)
    const refused = await call(session, "invoke_agent", { agent_id: "a", text: "x" }, headers)
    expect(refused.status).toBe(403)
    expect(refused.headers.get("www-authenticate")).toContain(`error="insufficient_scope"`)
    expect(refused.headers.get("www-authenticate")).toContain("mcp:write")
  })
})
