import * as Http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { scriptedAgent } from "../access/support.js"
import { createAgent, user } from "../agents/support.js"
import { createConnection, createConnector, invoke, petstore } from "../connectors/support.js"
import { obtainTokens, openSession, signedUpAdmin } from "../mcp/support.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { type LogLine, startTestNode, type TestNode } from "../support/TestNode.js"

/**
 * One edge: a bad input gets the same answer whichever stack takes it. Every case of the table is sent to a node
 * with the plain-Node fast paths on and to one with them off (SWITCHYARD_CONNECTOR_FAST_PATH and
 * SWITCHYARD_TASK_FAST_PATH false), on the three routes that have a fast path: the connector invoke, the agent
 * invoke and the MCP endpoint. Status, our headers and the body (request ids aside) must be identical. Each case
 * also says whether the fast node's fast path answers it (it reads the body) or declines it before reading
 * (the general stack answers on both nodes), so the table cannot pass by the fast path declining everything.
 */
const MAX_BODY = 4096

interface World {
  readonly node: TestNode
  readonly logs: Array<LogLine>
  readonly paths: Record<Route, string>
  readonly headers: Record<Route, Record<string, string>>
  /** Puts the key, the connection, the token and the session back in the node's memory. */
  readonly warm: () => Promise<void>
}
type Route = "connector" | "agent" | "mcp"

const worlds: Record<"fast" | "general", World> = {} as never
let target: TargetServer

const setUp = async (fastPaths: boolean): Promise<World> => {
  const logs: Array<LogLine> = []
  const flag = String(fastPaths)
  const node = await startTestNode({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_MAX_BODY_BYTES: String(MAX_BODY),
    SWITCHYARD_API_KEY_CACHE_TTL: "10 minutes",
    SWITCHYARD_CONNECTOR_CACHE_TTL: "10 minutes",
    SWITCHYARD_CONNECTOR_FAST_PATH: flag,
    SWITCHYARD_TASK_FAST_PATH: flag
  }, { logs })
  const admin = await signedUpAdmin(node)
  const apiKey = admin.api_key
  const connector = await createConnector(node, apiKey, petstore(target.url))
  const connection = await createConnection(node, apiKey, connector.id, {
    name: "main",
    credentials: { type: "api_key", value: "secret" }
  })
  const agent = await createAgent(node, apiKey, scriptedAgent())
  const token = (await obtainTokens(node, admin.email)).tokens.access_token
  const session = await openSession(node.baseUrl, token)
  const world: World = {
    node,
    logs,
    // what the fast paths answer from memory: the key, the connection, the token and the session, verified
    // (again before each case: a token or session due for its once-a-minute touch goes the general way once)
    warm: async () => {
      expect((await node.fetch("/v1/me", { apiKey })).status).toBe(200)
      expect((await invoke(node, apiKey, connector.id, connection.id, "listPets")).status).toBe(200)
      expect((await send(world, "mcp", { body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) })).status)
        .toBe(200)
    },
    paths: {
      connector: `/v1/tools/connectors/${connector.id}/connections/${connection.id}/createPet`,
      agent: `/v1/agents/${agent.id}/invoke`,
      mcp: "/mcp/"
    },
    headers: {
      connector: { "x-api-key": apiKey },
      agent: { "x-api-key": apiKey },
      mcp: {
        authorization: `Bearer ${token}`,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
        accept: "application/json, text/event-stream"
      }
    }
  }
  await world.warm()
  return world
}

beforeAll(async () => {
  target = await startTargetServer()
  worlds.fast = await setUp(true)
  worlds.general = await setUp(false)
}, 120_000)
afterAll(async () => {
  await Promise.all(Object.values(worlds).map((w) => w.node.stop()))
  await target?.close()
})

interface Sent {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly text: string
}

/**
 * Exactly these bytes and headers, nothing added: `content-length` from the body unless `chunked`, no
 * `content-type` unless given (null: none at all).
 */
const send = (
  world: World,
  route: Route,
  options: {
    readonly body: string | Buffer
    readonly contentType?: string | null
    readonly chunked?: boolean
    readonly query?: string
    readonly requestId?: string
  }
) =>
  new Promise<Sent>((resolve, reject) => {
    const url = new URL(world.node.baseUrl + world.paths[route] + (options.query ?? ""))
    const body = Buffer.isBuffer(options.body) ? options.body : Buffer.from(options.body, "utf8")
    const headers: Record<string, string> = { ...world.headers[route], "x-request-id": options.requestId ?? "edge-1" }
    const type = options.contentType === undefined ? "application/json" : options.contentType
    if (type !== null) headers["content-type"] = type
    if (options.chunked) headers["transfer-encoding"] = "chunked"
    else headers["content-length"] = String(body.length)
    const request = Http.request(url, { method: "POST", headers, agent: false, timeout: 10_000 }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (c: Buffer) => chunks.push(c))
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          text: Buffer.concat(chunks).toString("utf8")
        }))
    })
    request.on("timeout", () => request.destroy(new Error("no answer within 10 s")))
    request.on("error", reject)
    if (options.chunked) {
      request.write(body.subarray(0, 1))
      request.end(body.subarray(1))
    } else request.end(body)
  })

const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth)

/** A valid body of each route, to vary. */
const valid: Record<Route, unknown> = {
  connector: { body_params: { name: "Rex" } },
  agent: { input: { text: "hi", user } },
  mcp: { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "list_agents", arguments: {} } }
}

interface Case {
  readonly name: string
  readonly body: (route: Route) => string | Buffer
  readonly contentType?: string | null
  readonly chunked?: boolean
  readonly query?: string
  /** Whether the fast node's fast path answers it (true), or declines it to the general stack (false). */
  readonly fast: boolean | ((route: Route) => boolean)
  /** Routes where the case does not apply. */
  readonly skip?: ReadonlyArray<Route>
}

const cases: ReadonlyArray<Case> = [
  { name: "not JSON", body: () => "{", fast: true },
  { name: "truncated JSON", body: (r) => JSON.stringify(valid[r]).slice(0, -1), fast: true },
  { name: "an empty body", body: () => "", fast: (r) => r !== "agent" },
  { name: "a JSON array", body: () => "[]", fast: true },
  { name: "a JSON string", body: () => `"text"`, fast: true },
  { name: "JSON null", body: () => "null", fast: true },
  { name: "nesting 65 deep", body: () => nested(65), fast: true },
  { name: "nesting 64 deep", body: () => nested(64), fast: true },
  {
    name: "nesting 65 deep inside a valid body",
    body: (r) => JSON.stringify({ ...valid[r] as object, x: 1 }).replace(`"x":1`, `"x":${nested(65)}`),
    fast: true
  },
  {
    name: "brackets inside strings do not count",
    body: (r) => JSON.stringify({ ...valid[r] as object, x: "[".repeat(100) }),
    fast: true
  },
  {
    name: "an escaped NUL in a string",
    body: (r) => JSON.stringify({ ...valid[r] as object, x: "a\u0000b" }),
    fast: true
  },
  {
    name: "a raw NUL byte in a string",
    body: (r) => JSON.stringify({ ...valid[r] as object, x: "ab" }).replace(`"ab"`, `"a\u0000b"`),
    fast: true
  },
  { name: "a byte-order mark", body: (r) => "\uFEFF" + JSON.stringify(valid[r]), fast: true },
  {
    name: "invalid UTF-8",
    body: (r) =>
      Buffer.concat([
        Buffer.from(JSON.stringify(valid[r]).slice(0, -1) + `,"x":"`),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(`"}`)
      ]),
    fast: true
  },
  {
    name: "an unknown top-level field",
    body: (r) => JSON.stringify({ ...valid[r] as object, surprise: 1 }),
    fast: true
  },
  { name: "no content type", body: (r) => JSON.stringify(valid[r]), contentType: null, fast: false },
  { name: "text/plain", body: (r) => JSON.stringify(valid[r]), contentType: "text/plain", fast: false },
  { name: "text/json", body: (r) => JSON.stringify(valid[r]), contentType: "text/json", fast: false },
  { name: "application/jsonx", body: (r) => JSON.stringify(valid[r]), contentType: "application/jsonx", fast: false },
  { name: "a form", body: () => "a=1", contentType: "application/x-www-form-urlencoded", fast: false },
  { name: "an empty content type", body: (r) => JSON.stringify(valid[r]), contentType: "", fast: false },
  { name: "no content type, no body", body: () => "", contentType: null, fast: (r) => r === "connector" },
  {
    name: "application/*+json with a charset",
    body: (r) => JSON.stringify(valid[r]),
    contentType: "application/vnd.api+json; charset=utf-8",
    fast: true
  },
  { name: "upper-case JSON type", body: (r) => JSON.stringify(valid[r]), contentType: "Application/JSON", fast: true },
  { name: "a body one byte over the limit", body: () => `"${"x".repeat(MAX_BODY - 1)}"`, fast: false },
  { name: "a body at the limit", body: () => `"${"x".repeat(MAX_BODY - 2)}"`, fast: true },
  { name: "a chunked body", body: (r) => JSON.stringify(valid[r]), chunked: true, fast: false },
  { name: "a chunked body that is not JSON", body: () => "{", chunked: true, fast: false },
  { name: "a NUL in the query", body: (r) => JSON.stringify(valid[r]), query: "?x=%00", fast: false }
]

/** What must match: status, our headers, and the body with the node-specific ids replaced. */
const comparable = (world: World, sent: Sent) => {
  const kept = ["content-type", "x-switchyard-error", "allow", "www-authenticate", "retry-after", "mcp-session-id"]
  const headers = Object.fromEntries(kept.map((h) => [h, sent.headers[h] ?? null]))
  const ok = sent.status >= 200 && sent.status < 300 && !sent.text.includes(`"error"`)
  let body: unknown = sent.text
  try {
    body = JSON.parse(sent.text)
  } catch {
    // compared as text
  }
  return {
    status: sent.status,
    requestId: sent.headers["x-request-id"] ?? null,
    headers,
    // answers that did something (a task, a target's echo) carry their own ids: their status is what counts
    body: ok ? "<done>" : JSON.parse(JSON.stringify(body).replaceAll(world.paths.connector, "<path>"))
  }
}

describe("one edge: the fast paths and the HttpApi stack answer bad input alike", () => {
  for (const route of ["connector", "agent", "mcp"] as const) {
    for (const c of cases) {
      if (c.skip?.includes(route)) continue
      it(`${route}: ${c.name}`, async () => {
        const requestId = `edge-${route}-${c.name.replace(/[^A-Za-z0-9]+/g, "-")}`.slice(0, 100)
        const options = {
          body: c.body(route),
          ...(c.contentType === undefined ? {} : { contentType: c.contentType }),
          ...(c.chunked === undefined ? {} : { chunked: c.chunked }),
          ...(c.query === undefined ? {} : { query: c.query }),
          requestId
        }
        await worlds.fast.warm()
        const fast = await send(worlds.fast, route, options)
        const general = await send(worlds.general, route, options)
        expect(comparable(worlds.fast, fast)).toEqual(comparable(worlds.general, general))
        expect(fast.headers["x-request-id"]).toBe(requestId)
        const answeredFast = worlds.fast.logs.some((l) =>
          l.annotations["request_id"] === requestId && l.annotations["fast_path"] === true
        )
        expect({ answeredFast }).toEqual({ answeredFast: typeof c.fast === "function" ? c.fast(route) : c.fast })
        expect(worlds.general.logs.some((l) => l.annotations["fast_path"] === true)).toBe(false)
      })
    }
  }
})
