import * as Crypto from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent, invokeAgent } from "../agents/support.js"
import { createConnection, createConnector, invoke, petstore } from "../connectors/support.js"
import { mcpPost, obtainTokens, openSession, signedUpAdmin } from "../mcp/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { runCli, spawnNode } from "../support/NodeProcess.js"
import { startTargetServer, type TargetServer } from "../support/TargetServer.js"
import { testEnvironment, type TestNode } from "../support/TestNode.js"
import { eventually, type ReceivedSpan, startOtlpReceiver } from "./support.js"

// The node's JSON logger is the one `switchyard serve` installs (src/cli.ts), and tracing replaces it with the
// traced one (Tracing.ts): an in-process node logs through the test's logger instead, so these tests read the
// stderr of a real `switchyard serve`.

/** A JSON line the node wrote. */
interface JsonLine {
  readonly message: unknown
  readonly logLevel: string
  readonly annotations: Record<string, unknown>
}

/** `switchyard serve` at Info, as a TestNode for the tests' helpers (organizations made by `switchyard bootstrap`). */
const startNode = async (overrides: Record<string, string>) => {
  const env = await testEnvironment({
    SWITCHYARD_EGRESS_ALLOW: "127.0.0.1",
    SWITCHYARD_LOG_LEVEL: "info",
    ...overrides
  })
  const child = spawnNode(env)
  await child.waitReady()
  let count = 0
  const node: TestNode = {
    baseUrl: child.baseUrl,
    databaseUrl: env.DATABASE_URL,
    bootstrap: async (organization) => {
      const email = `admin-${++count}-${Date.now()}@example.com`
      const created = await runCli(
        ["bootstrap", "--org", organization ?? `Org ${count}`, "--email", email, "--json"],
        env
      )
      if (created.code !== 0) throw new Error(`bootstrap: ${created.stderr}`)
      return JSON.parse(created.stdout)
    },
    api: () => Promise.reject(new Error("not over the typed client: a node process")),
    fetch: (path, init = {}) => {
      const { apiKey, ...rest } = init
      const headers = new Headers(rest.headers)
      if (apiKey !== undefined) headers.set("x-api-key", apiKey)
      return fetch(child.baseUrl + path, { ...rest, headers })
    },
    stop: async () => void (await child.stop())
  }
  const lines = (): Array<JsonLine> =>
    child.output().split("\n").flatMap((line) => {
      if (!line.startsWith("{")) return []
      try {
        return [JSON.parse(line)]
      } catch {
        return []
      }
    })
  return { node, child, lines }
}

type Started = Awaited<ReturnType<typeof startNode>>

/** The access line of the request the node answered with this `x-request-id`. */
const accessLine = (started: Started, requestId: string) =>
  eventually(
    () => started.lines().find((l) => l.message === "http" && l.annotations["request_id"] === requestId),
    15_000,
    `the access line of ${requestId}`
  )

const requestIdOf = (response: Response) => response.headers.get("x-request-id")!

const TRACE_ID = /^[0-9a-f]{32}$/
const SPAN_ID = /^[0-9a-f]{16}$/

describe("log lines with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT)", () => {
  let started: Started
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>
  let target: TargetServer
  let openai: ModelServer
  let apiKey: string
  let connection: { id: string; connector_id: string }

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    target = await startTargetServer()
    openai = await startModelServer("openai")
    started = await startNode({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
      SWITCHYARD_OPENAI_BASE_URL: openai.url,
      SWITCHYARD_OPENAI_API_KEY: "sk-deployment"
    })
    apiKey = (await started.node.bootstrap()).api_key
    const connector = await createConnector(started.node, apiKey, petstore(target.url))
    connection = await createConnection(started.node, apiKey, connector.id, {
      name: "pets",
      credentials: { type: "api_key", value: "k" }
    })
  })
  afterAll(async () => {
    await started?.child.stop()
    await receiver?.close()
    await target?.close()
    await openai?.close()
  })

  const exported = (find: (s: ReceivedSpan) => boolean, what: string) =>
    eventually(() => receiver.spans.find(find), 15_000, what)

  /**
   * A fast path's access line names the request's trace: without a caller's trace, that of the server span the
   * fast path made for it, exported with the status, which `work` (the request's own span) hangs under; with the
   * caller's `traceparent`, the caller's span, which `work` hangs under.
   */
  const expectFastPathLines = async (
    send: (headers: Record<string, string>) => Promise<Response>,
    work: (s: ReceivedSpan) => boolean,
    status: number
  ) => {
    const own = await send({})
    expect(own.status).toBe(status)
    await own.arrayBuffer()
    const line = (await accessLine(started, requestIdOf(own))).annotations
    expect(line).toMatchObject({ fast_path: true, trace_id: expect.stringMatching(TRACE_ID) })
    const server = await exported((s) => s.spanId === line["span_id"], "the request's server span")
    expect(server).toMatchObject({ traceId: line["trace_id"], kind: 2, parentSpanId: undefined })
    expect(server.attributes["http.response.status_code"]).toBe(status)
    const ownWork = await exported((s) => s.traceId === line["trace_id"] && work(s), "the request's work")
    expect(ownWork.parentSpanId).toBe(server.spanId)

    const traceId = Crypto.randomBytes(16).toString("hex")
    const callerSpanId = "b7ad6b7169203331"
    const traced = await send({ traceparent: `00-${traceId}-${callerSpanId}-01` })
    expect(traced.status).toBe(status)
    await traced.arrayBuffer()
    const tracedLine = (await accessLine(started, requestIdOf(traced))).annotations
    expect(tracedLine).toMatchObject({ fast_path: true, trace_id: traceId, span_id: callerSpanId })
    const tracedWork = await exported(
      (s) => s.traceId === traceId && work(s),
      "the request's work, in the caller's trace"
    )
    expect(tracedWork.parentSpanId).toBe(callerSpanId)
  }

  it("names the server span of an HttpApi request in its access line", async () => {
    const response = await started.node.fetch("/v1/agents", {
      method: "POST",
      apiKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Traced", model: { provider: "scripted", script: [{ text: "hi" }] } })
    })
    expect(response.status).toBe(201)
    const requestId = requestIdOf(response)
    const line = (await accessLine(started, requestId)).annotations
    const server = await exported(
      (s) => s.kind === 2 && s.attributes["http.response.header.x-request-id"] === requestId,
      "the request's server span"
    )
    expect(server.attributes["http.route"]).toBe("/v1/agents")
    expect(line).toMatchObject({ path: "/v1/agents", status: 201, trace_id: server.traceId, span_id: server.spanId })
    expect(line["fast_path"]).toBeUndefined()
  })

  it("names the request's trace in the access line of a connector invoke on the fast path", async () => {
    const send = (headers: Record<string, string>) =>
      started.node.fetch(`/v1/tools/connectors/${connection.connector_id}/connections/${connection.id}/getPet`, {
        method: "POST",
        apiKey,
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ path_params: { petId: "7" } })
      })
    // the key and the connection in the node's memory: the fast path takes what follows
    await (await invoke(started.node, apiKey, connection.connector_id, connection.id, "getPet", {
      path_params: { petId: "warm" }
    })).arrayBuffer()
    await expectFastPathLines(send, (s) => s.name === "connector getPet", 200)
  })

  it("names the request's trace in the access line of a task invoke on the fast path", async () => {
    const agent = await createAgent(started.node, apiKey, {
      name: "Fast",
      model: { provider: "scripted", script: [{ text: "done" }] }
    })
    let task: { id: string } | undefined
    const send = async (headers: Record<string, string>) => {
      const response = await invokeAgent(started.node, apiKey, agent.id, "hi", { headers })
      task = await response.clone().json()
      return response
    }
    await expectFastPathLines(
      send,
      (s) => s.name === "task.run" && s.attributes["switchyard.task_id"] === task?.id,
      200
    )
  })

  it("names the request's trace in the access line of an MCP tools/call on the fast path", async () => {
    const admin = await signedUpAdmin(started.node)
    const token = (await obtainTokens(started.node, admin.email)).tokens.access_token
    const session = await openSession(started.node.baseUrl, token)
    const connector = await createConnector(started.node, admin.api_key, petstore(target.url))
    const own = await createConnection(started.node, admin.api_key, connector.id, {
      name: "main",
      credentials: { type: "api_key", value: "k" }
    })
    let id = 0
    const send = (headers: Record<string, string>) =>
      mcpPost(started.node.baseUrl, {
        jsonrpc: "2.0",
        id: ++id,
        method: "tools/call",
        params: {
          name: "invoke_operation",
          arguments: { connector_id: connector.id, connection_id: own.id, operation_id: "listPets" }
        }
      }, {
        authorization: `Bearer ${token}`,
        "mcp-session-id": session,
        "mcp-protocol-version": "2025-11-25",
        ...headers
      })
    // the token, the session and the connection in the node's memory: the fast path takes what follows
    await (await send({})).arrayBuffer()
    await expectFastPathLines(send, (s) => s.name === "connector listPets", 200)
  })

  it("names the task's trace in a line its run writes", async () => {
    const agent = await createAgent(started.node, apiKey, {
      name: "Fenced",
      model: { provider: "openai", name: "gpt-4.1-mini" },
      skills: [{ connection_id: connection.id, operation_ids: ["getPet"] }]
    })
    // a model call that answers only once another run has claimed the task meanwhile
    let answer: () => void = () => undefined
    const claimed = new Promise<void>((resolve) => (answer = resolve))
    openai.script.push(
      { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "1" } } }], until: claimed },
      { text: "done" }
    )
    const asked = openai.requests.length
    let task: { id: string }
    try {
      const response = await invokeAgent(started.node, apiKey, agent.id, "hi", { async: true })
      expect(response.status).toBe(202)
      task = await response.json()
      await eventually(() => openai.requests.length > asked || undefined, 15_000, "the run's model call")
      // what another node's claim of the task does to this run: its next write finds the claim gone, and it stops
      const db = new pg.Client({ connectionString: started.node.databaseUrl })
      await db.connect()
      try {
        await db.query("UPDATE tasks SET run_epoch = run_epoch + 1 WHERE id = $1", [task.id])
      } finally {
        await db.end()
      }
    } finally {
      answer()
    }
    const line = await eventually(
      () =>
        started.lines().find((l) =>
          String(l.message).includes("no longer its own") && l.annotations["task_id"] === task.id
        ),
      15_000,
      "the run's warning"
    )
    expect(line.logLevel).toBe("WARN")
    expect(line.annotations["span_id"]).toMatch(SPAN_ID)
    const run = await exported(
      (s) =>
        s.name === "task.run" && s.attributes["switchyard.task_id"] === task.id &&
        s.traceId === line.annotations["trace_id"],
      "the run's span, in the line's trace"
    )
    expect(line.annotations["span_id"]).toBe(run.spanId)
    // the model call it made is in the same trace
    await exported((s) => s.parentSpanId === run.spanId && s.name === "chat gpt-4.1-mini", "the run's model call")
  })
})

describe("log lines with tracing off", () => {
  it("carry no trace_id or span_id, on either stack", async () => {
    const target = await startTargetServer()
    const started = await startNode({})
    try {
      const { node } = started
      const apiKey = (await node.bootstrap()).api_key
      const connector = await createConnector(node, apiKey, petstore(target.url))
      const connection = await createConnection(node, apiKey, connector.id, {
        name: "pets",
        credentials: { type: "api_key", value: "k" }
      })
      const requests: Array<string> = []
      for (let i = 0; i < 2; i++) {
        const response = await invoke(node, apiKey, connector.id, connection.id, "getPet", {
          path_params: { petId: "1" }
        })
        expect(response.status).toBe(200)
        await response.arrayBuffer()
        requests.push(requestIdOf(response))
      }
      const agent = await createAgent(node, apiKey, {
        name: "Untraced",
        model: { provider: "scripted", script: [{ text: "done" }] }
      })
      const invoked = await invokeAgent(node, apiKey, agent.id, "hi")
      expect((await invoked.json()).status).toBe("completed")
      requests.push(requestIdOf(invoked))
      const lines = await Promise.all(requests.map((id) => accessLine(started, id)))
      // both stacks answered
      expect(lines.some((l) => l.annotations["fast_path"] === true)).toBe(true)
      expect(started.lines().some((l) => l.message === "http" && l.annotations["fast_path"] === undefined)).toBe(true)
      expect(started.lines().filter((l) => "trace_id" in l.annotations || "span_id" in l.annotations)).toEqual([])
    } finally {
      await started.child.stop()
      await target.close()
    }
  })
})
