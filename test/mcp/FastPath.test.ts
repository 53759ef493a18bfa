import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createConnection, createConnector, petstore } from "../connectors/support.js"
import { echo, startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { initialize, mcpPost, obtainTokens, openSession, signedUpAdmin } from "./support.js"

/**
 * Every case runs against both ways a node answers `POST /mcp/`: the plain-Node fast path (once the token
 * and the session are in this node's caches) and the general Effect route (SWITCHYARD_CONNECTOR_FAST_PATH
 * false). Each answer is also kept, with the node-specific parts replaced, and the two runs must match
 * exactly: status, our headers and body.
 */
const answers = new Map<string, Map<string, unknown>>()
let target: TargetServer
beforeAll(async () => {
  target = await startTargetServer()
})
afterAll(async () => {
  await target?.close()
})

// a reply without anything node-specific, so both runs can be compared byte for byte
const fixed = (status: number, body: unknown, type = "application/json") => {
  target.reply = (request, res) => {
    res.writeHead(status, { "content-type": type })
    res.end(typeof body === "string" ? body : JSON.stringify({ ...body as object, method: request.method }))
  }
}

describe.each([["fast path", "true"], ["general route", "false"]])("POST /mcp/ through the %s", (label, fastPath) => {
  let node: TestNode
  let admin: Awaited<ReturnType<typeof signedUpAdmin>>
  let token: string
  let session: string
  let connector: any
  let connection: any
  const seen = new Map<string, unknown>()
  answers.set(label, seen)

  beforeAll(async () => {
    node = await startTestNode({
      SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
      SWITCHYARD_CONNECTOR_TIMEOUT: "1500 millis",
      SWITCHYARD_CONNECTOR_FAST_PATH: fastPath
    })
    admin = await signedUpAdmin(node)
    token = (await obtainTokens(node, admin.email)).tokens.access_token
    session = await openSession(node.baseUrl, token)
    connector = await createConnector(node, admin.api_key, petstore(target.url))
    connection = await createConnection(node, admin.api_key, connector.id, {
      name: "main",
      credentials: { type: "api_key", value: "secret-123" }
    })
    // the first calls verify the token and touch the session on the general route; later ones may go fast
    await send("warm-up", { jsonrpc: "2.0", id: 0, method: "ping" })
    await callTool("warm-up", "invoke_operation", invokeArgs("listPets"))
  })
  afterAll(async () => {
    await node?.stop()
    target.reply = echo
  })

  const invokeArgs = (operation: string, extra: Record<string, unknown> = {}) => ({
    connector_id: connector.id,
    connection_id: connection.id,
    operation_id: operation,
    ...extra
  })

  /** Sends a message; keeps the answer (ids replaced) under `name` for the comparison of both runs. */
  const send = async (
    name: string,
    body: unknown,
    headers: Record<string, string> = {},
    bearer = token,
    path = "/mcp/"
  ) => {
    const response = await fetch(`${node.baseUrl}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${bearer}`,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
        "x-request-id": `req-${name}`,
        ...headers
      },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    const text = await response.text()
    const kept = ["content-type", "x-switchyard-error", "x-request-id", "www-authenticate", "mcp-session-id"]
    const answer = {
      status: response.status,
      headers: Object.fromEntries(kept.map((h) => [h, response.headers.get(h)])),
      body: text
    }
    const replace = (s: string) =>
      s.replaceAll(node.baseUrl, "<base>").replaceAll(connector?.id ?? "<none>", "<connector>").replaceAll(
        connection?.id ?? "<none>",
        "<connection>"
      ).replaceAll(target.url, "<target>").replace(/127\.0\.0\.1:\d+/g, "<host>")
    seen.set(name, JSON.parse(replace(JSON.stringify(answer))))
    return { ...answer, json: text === "" ? undefined : JSON.parse(text) }
  }

  const callTool = (name: string, tool: string, args: unknown, headers: Record<string, string> = {}, bearer = token) =>
    send(
      name,
      { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: tool, arguments: args } },
      headers,
      bearer
    )

  it("invokes a connector operation with the stored key and returns the target's answer", async () => {
    fixed(200, { pet: "Rex" })
    const before = target.requests.length
    const answer = await callTool(
      "success",
      "invoke_operation",
      invokeArgs("createPet", { body_params: { name: "Rex" } })
    )
    expect(answer.status).toBe(200)
    expect(answer.headers["x-request-id"]).toBe("req-success")
    expect(answer.headers["x-switchyard-error"]).toBeNull()
    expect(answer.json.result.structuredContent).toEqual({
      status: 200,
      content_type: "application/json",
      body: { pet: "Rex", method: "POST" },
      truncated: false
    })
    expect(JSON.parse(answer.json.result.content[0].text)).toEqual(answer.json.result.structuredContent)
    expect(target.requests[before]!.headers["x-api-key"]).toBe("secret-123")
    expect(JSON.stringify(target.requests[before]!.headers)).not.toContain(token)
  })

  it("passes a target's error status and text body on as the result", async () => {
    fixed(418, "I am a teapot", "text/plain")
    const answer = await callTool("upstream-418", "invoke_operation", invokeArgs("listPets"))
    expect(answer.json.result.structuredContent).toEqual({
      status: 418,
      content_type: "text/plain",
      body: "I am a teapot",
      truncated: false
    })
    expect(answer.json.result.isError).toBeUndefined()
  })

  it("passes a target's JSON body on as sent, and a body that only claims to be JSON as text", async () => {
    // whitespace, an escape, a number JSON.stringify would write otherwise: the body goes in as the target sent it
    const sent = `\n{ "pet": "R\\u0065x",\n  "weight": 1.50, "tags": [ "a" ] }\n`
    fixed(200, sent, "application/problem+json")
    const answer = await callTool("json-as-sent", "invoke_operation", invokeArgs("listPets"))
    const expected = {
      status: 200,
      content_type: "application/problem+json",
      body: { pet: "Rex", weight: 1.5, tags: ["a"] },
      truncated: false
    }
    expect(answer.json.result.structuredContent).toEqual(expected)
    expect(answer.json.result.content[0].text).toBe(
      `{"status":200,"content_type":"application/problem+json","body":${sent.trim()},"truncated":false}`
    )
    expect(JSON.parse(answer.json.result.content[0].text)).toEqual(expected)
    fixed(200, `{"pet": "Rex"`)
    const broken = await callTool("json-broken", "invoke_operation", invokeArgs("listPets"))
    expect(broken.json.result.structuredContent.body).toBe(`{"pet": "Rex"`)
    expect(JSON.parse(broken.json.result.content[0].text).body).toBe(`{"pet": "Rex"`)
  })

  it("reports arguments that do not match the tool's schema as validation_failed", async () => {
    const answer = await callTool("bad-arguments", "invoke_operation", {
      ...invokeArgs("listPets"),
      connection_id: "x"
    })
    expect(answer.json.result.isError).toBe(true)
    expect(answer.json.result.structuredContent.error.code).toBe("validation_failed")
    const extra = await callTool("extra-argument", "invoke_operation", { ...invokeArgs("listPets"), surprise: 1 })
    expect(extra.json.result.structuredContent.error.code).toBe("validation_failed")
  })

  it("validates the operation's input before calling, and keeps the credentials' header", async () => {
    const before = target.requests.length
    const missing = await callTool("operation-input", "invoke_operation", invokeArgs("createPet", { body_params: {} }))
    expect(missing.json.result.structuredContent.error).toMatchObject({ code: "validation_failed" })
    expect(missing.json.result.structuredContent.error.details.issues.map((i: any) => i.path)).toContain(
      "body_params.name"
    )
    const header = await callTool(
      "header-not-allowed",
      "invoke_operation",
      invokeArgs("listPets", { headers: { "X-Api-Key": "mine" } })
    )
    expect(header.json.result.structuredContent.error.code).toBe("header_not_allowed")
    expect(target.requests.length).toBe(before)
  })

  it("answers unknown operations and connections with not_found", async () => {
    const operation = await callTool("unknown-operation", "invoke_operation", invokeArgs("nope"))
    expect(operation.json.result.structuredContent.error.code).toBe("not_found")
    const other = await callTool("unknown-connection", "invoke_operation", {
      ...invokeArgs("listPets"),
      connection_id: "00000000-0000-4000-8000-000000000000"
    })
    expect(other.json.result.structuredContent.error.code).toBe("not_found")
  })

  it("reports a timeout and an unreachable target as tool errors, and records every call", async () => {
    target.reply = () => {}
    const slow = await callTool("timeout", "invoke_operation", invokeArgs("slow"))
    expect(slow.json.result.structuredContent.error.code).toBe("upstream_timeout")
    target.reply = echo
    const gone = await startTargetServer()
    await gone.close()
    const other = await createConnector(node, admin.api_key, petstore(gone.url), { name: "Gone" })
    const conn = await createConnection(node, admin.api_key, other.id, {
      name: "x",
      credentials: { type: "api_key", value: "k" }
    })
    const args = { connector_id: other.id, connection_id: conn.id, operation_id: "listPets" }
    await callTool("unreachable-first", "invoke_operation", args)
    const unreachable = await callTool("unreachable", "invoke_operation", args)
    expect(unreachable.json.result.structuredContent.error.code).toBe("upstream_unreachable")
    // the usage records name the caller's grant and user, as REST calls name the key
    const client = new pg.Client({ connectionString: node.databaseUrl })
    await client.connect()
    try {
      let rows: Array<any> = []
      for (let i = 0; i < 50 && rows.length < 2; i++) {
        await new Promise((r) => setTimeout(r, 100))
        rows = (await client.query(
          `SELECT status, error_code, user_id, api_key_id FROM connector_invocations WHERE connection_id = $1`,
          [conn.id]
        )).rows
      }
      expect(rows).toHaveLength(2)
      expect(rows.every((r) => r.status === null && r.error_code === "upstream_unreachable")).toBe(true)
      expect(rows[0].user_id).not.toBeNull()
      expect(rows[0].api_key_id).not.toBeNull()
    } finally {
      await client.end()
    }
  })

  it("reports a body that stalls or breaks after the status as the tool error REST gives, not a 500", async () => {
    // with a declared length (read whole) and without (read as a stream): both are a tool result
    for (const length of [undefined, "100"]) {
      target.reply = (_request, res) => {
        res.writeHead(200, {
          "content-type": "application/json",
          ...(length === undefined ? {} : { "content-length": length })
        })
        res.write(`{"partial":`)
      }
      const stalled = await callTool(`body-stalls-${length ?? "chunked"}`, "invoke_operation", invokeArgs("listPets"))
      expect(stalled.status).toBe(200)
      expect(stalled.headers["x-switchyard-error"]).toBeNull()
      expect(stalled.json).toMatchObject({ jsonrpc: "2.0", id: 7, result: { isError: true } })
      expect(stalled.json.result.structuredContent.error).toMatchObject({
        code: "upstream_timeout",
        message: "The target API did not answer within 1.5 s (SWITCHYARD_CONNECTOR_TIMEOUT)."
      })
      target.reply = (_request, res) => {
        res.writeHead(200, {
          "content-type": "application/json",
          ...(length === undefined ? {} : { "content-length": length })
        })
        res.write(`{"partial":`, () => setTimeout(() => res.socket?.destroy(), 50))
      }
      const reset = await callTool(`body-reset-${length ?? "chunked"}`, "invoke_operation", invokeArgs("listPets"))
      expect(reset.status).toBe(200)
      expect(reset.json.result.isError).toBe(true)
      expect(reset.json.result.structuredContent.error.code).toBe("upstream_unreachable")
    }
    target.reply = echo
  })

  it("reads a large body only up to the cut, then closes the target's connection", async () => {
    const CHUNK = Buffer.alloc(64 * 1024, "a")
    const TOTAL = 200 * 1024 * 1024
    for (const length of [undefined, String(TOTAL)]) {
      let written = 0
      let closedEarly: Promise<boolean> = Promise.resolve(false)
      target.reply = (_request, res) => {
        res.writeHead(200, {
          "content-type": "text/plain",
          ...(length === undefined ? {} : { "content-length": length })
        })
        closedEarly = new Promise((resolve) => res.once("close", () => resolve(!res.writableFinished)))
        const more = () => {
          while (written < TOTAL && !res.destroyed) {
            written += CHUNK.length
            if (!res.write(CHUNK)) return void res.once("drain", more)
          }
          if (!res.destroyed) res.end()
        }
        more()
      }
      const answer = await callTool(`large-body-${length ?? "chunked"}`, "invoke_operation", invokeArgs("listPets"))
      const result = answer.json.result.structuredContent
      expect({ ...result, body: result.body.length }).toEqual({
        status: 200,
        content_type: "text/plain",
        body: 1_000_000,
        truncated: true
      })
      expect(await closedEarly).toBe(true)
      // socket buffers let the target get somewhat ahead, never through the whole body
      expect(written).toBeLessThan(32 * 1024 * 1024)
    }
    target.reply = echo
  })

  it("needs the write scope to invoke: 403 insufficient_scope in the error envelope", async () => {
    const readOnly = (await obtainTokens(node, admin.email, { scope: "mcp:read" })).tokens.access_token
    const ownSession = session
    session = await openSession(node.baseUrl, readOnly)
    try {
      await send("read-only-warm-up", { jsonrpc: "2.0", id: 0, method: "ping" }, {}, readOnly)
      const refused = await callTool("insufficient-scope", "invoke_operation", invokeArgs("listPets"), {}, readOnly)
      expect(refused.status).toBe(403)
      expect(refused.headers["x-switchyard-error"]).toBe("true")
      expect(refused.headers["www-authenticate"]).toContain(`error="insufficient_scope"`)
      expect(refused.json.error).toMatchObject({ code: "insufficient_scope", request_id: "req-insufficient-scope" })
    } finally {
      session = ownSession
    }
  })

  it("refuses tools/call arguments that are not an object with -32602, and runs no tool", async () => {
    const before = target.requests.length
    for (const [tool, args] of [["invoke_operation", invokeArgs("listPets")], ["list_agents", {}]] as const) {
      for (const [kind, bad] of [["array", [1, 2]], ["string", "str"], ["null", null], ["array-of-args", [args]]]) {
        const answer = await callTool(`arguments-${tool}-${kind}`, tool, bad)
        expect(answer.status).toBe(200)
        expect(answer.json.result).toBeUndefined()
        expect(answer.json).toMatchObject({ id: 7, error: { code: -32602 } })
        expect(answer.json.error.message).toContain("`arguments` must be an object")
      }
    }
    expect(target.requests.length).toBe(before)
    // absent arguments are no arguments
    const none = await send("arguments-absent", {
      jsonrpc: "2.0",
      id: 8,
      method: "tools/call",
      params: { name: "list_agents" }
    })
    expect(none.json.result.isError).toBeUndefined()
    expect(none.json.result.structuredContent.items).toEqual([])
  })

  it("answers at /mcp, without the trailing slash, as at /mcp/", async () => {
    fixed(200, { pet: "Rex" })
    const call = { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "invoke_operation" } }
    const args = invokeArgs("createPet", { body_params: { name: "Rex" } })
    const slashed = await send("at-slashed", { ...call, params: { ...call.params, arguments: args } })
    const bare = await send("at-bare", { ...call, params: { ...call.params, arguments: args } }, {}, token, "/mcp")
    expect(bare.status).toBe(200)
    expect(bare.json).toEqual(slashed.json)
    const list = await send("at-bare-list", { jsonrpc: "2.0", id: 2, method: "tools/list" }, {}, token, "/mcp")
    expect(list.json.result.tools.map((t: any) => t.name)).toContain("invoke_operation")
  })

  it("answers the other messages as the endpoint does", async () => {
    expect((await send("ping", { jsonrpc: "2.0", id: 1, method: "ping" })).json.result).toEqual({})
    const tools = await send("tools-list", { jsonrpc: "2.0", id: 2, method: "tools/list" })
    expect(tools.json.result.tools.map((t: any) => t.name)).toContain("invoke_operation")
    expect((await send("notification", { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202)
    expect((await send("unknown-method", { jsonrpc: "2.0", id: 3, method: "nope" })).json.error.code).toBe(-32601)
    expect((await callTool("unknown-tool", "no_such_tool", {})).json.error.code).toBe(-32602)
    const junk = await send("parse-error", "{")
    expect(junk.status).toBe(400)
    expect(junk.json.error.code).toBe(-32700)
    const batch = await send("batch", [{ jsonrpc: "2.0", id: 1, method: "ping" }])
    expect(batch.status).toBe(400)
    expect(batch.json).toMatchObject({ id: null, error: { code: -32600, message: expect.stringContaining("batches") } })
    const cursor = await send("tools-list-cursor", {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/list",
      params: { cursor: "x" }
    })
    expect(cursor.json.error.code).toBe(-32602)
    // a 2025-03-26 session takes batches: its first request takes the general route, the next may go fast
    const opened = await mcpPost(node.baseUrl, {
      ...initialize,
      params: { ...initialize.params, protocolVersion: "2025-03-26" }
    }, { authorization: `Bearer ${token}` })
    const old26 = { "mcp-session-id": opened.headers.get("mcp-session-id")!, "mcp-protocol-version": "2025-03-26" }
    for (const name of ["batch-2025-03-26", "batch-2025-03-26-again"]) {
      const answer = await send(name, [
        { jsonrpc: "2.0", id: 1, method: "ping" },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "invoke_operation", arguments: {} } }
      ], old26)
      expect(answer.json.map((r: { id: number }) => r.id)).toEqual([1, 2])
      expect(answer.json[1].result.structuredContent.error.code).toBe("validation_failed")
    }
    // not an object at all: told what the body must be, not about batches
    for (const [name, body] of [["string-body", `"hello"`], ["null-body", "null"], ["number-body", "5"]]) {
      const answer = await send(name!, body!)
      expect(answer.status).toBe(400)
      expect(answer.json).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "The body must be a JSON-RPC request object." }
      })
    }
    // an invalid request whose id can be read is answered with that id (JSON-RPC 2.0 §5)
    const old = await send("jsonrpc-1.0", { jsonrpc: "1.0", id: 5, method: "ping" })
    expect(old.status).toBe(400)
    expect(old.json).toMatchObject({ id: 5, error: { code: -32600, message: "`jsonrpc` must be \"2.0\"." } })
    const params = await send("params-array", { jsonrpc: "2.0", id: "p-1", method: "ping", params: [1] })
    expect(params.json).toMatchObject({ id: "p-1", error: { code: -32600 } })
    const badId = await send("id-fraction", { jsonrpc: "2.0", id: 1.5, method: "ping" })
    expect(badId.json).toMatchObject({ id: null, error: { code: -32600 } })
    const deep = await send("too-deep", "[".repeat(100) + "]".repeat(100))
    expect(deep.status).toBe(400)
    expect(deep.json.error).toMatchObject({ code: "invalid_json", request_id: "req-too-deep" })
    const tasks = await callTool("list-tasks", "list_tasks", {})
    expect(tasks.json.result.structuredContent.items).toEqual([])
  })

  it("leaves refusals to the endpoint's checks: token, Origin, protocol version, session", async () => {
    expect((await send("bad-token", { jsonrpc: "2.0", id: 1, method: "ping" }, {}, "sy_at_nope")).status).toBe(401)
    const foreign = await send("foreign-origin", { jsonrpc: "2.0", id: 1, method: "ping" }, {
      origin: "https://evil.example"
    })
    expect(foreign.status).toBe(403)
    const version = await send("bad-version", { jsonrpc: "2.0", id: 1, method: "ping" }, {
      "mcp-protocol-version": "2024-01-01"
    })
    expect(version.status).toBe(400)
    const other = await signedUpAdmin(node)
    const theirs = (await obtainTokens(node, other.email)).tokens.access_token
    await openSession(node.baseUrl, theirs)
    const notTheirs = await send("foreign-session", { jsonrpc: "2.0", id: 1, method: "ping" }, {}, theirs)
    expect(notTheirs.status).toBe(404)
    expect(notTheirs.json.error.code).toBe("session_not_found")
    const form = await send("form-body", "{}", { "content-type": "text/plain" })
    expect(form.status).toBe(415)
  })
})

describe("both paths", () => {
  it("give the same answers, case by case", () => {
    const fast = answers.get("fast path")!
    const general = answers.get("general route")!
    expect([...fast.keys()].sort()).toEqual([...general.keys()].sort())
    for (const [name, answer] of fast) expect({ name, answer }).toEqual({ name, answer: general.get(name) })
  })
})
