import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAgent, invokeAgent, startPetWorld } from "../agents/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { eventually, type ReceivedSpan, startOtlpReceiver } from "./support.js"

type World = Awaited<ReturnType<typeof startPetWorld>>
type Receiver = Awaited<ReturnType<typeof startOtlpReceiver>>

const toolAgent = (world: World) =>
  createAgent(world.node, world.apiKey, {
    name: "Pet helper",
    instructions: "Help with pets.",
    model: {
      provider: "scripted",
      script: [
        { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
        { text: "Result: {{last_tool_result}}" }
      ]
    },
    skills: [{ connection_id: world.connection.id, operation_ids: ["getPet"] }]
  })

describe("traces over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT)", () => {
  let world: World
  let receiver: Receiver
  let openai: ModelServer

  beforeAll(async () => {
    receiver = await startOtlpReceiver()
    openai = await startModelServer("openai")
    world = await startPetWorld({
      SWITCHYARD_OPENAI_BASE_URL: openai.url,
      SWITCHYARD_OPENAI_API_KEY: "sk-deployment",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_SERVICE_NAME: "switchyard-test",
      SWITCHYARD_TRACE_PROPAGATE_UPSTREAM: "true",
      // the general stack, whose request span the task's run and calls hang under
      SWITCHYARD_TASK_FAST_PATH: "false"
    })
  })
  afterAll(async () => {
    await world?.stop()
    await receiver?.close()
    await openai?.close()
  })

  it("exports one trace per invoke: the request, the task run, GenAI model calls, the connector call", async () => {
    const agent = await toolAgent(world)
    const before = world.target.requests.length
    const response = await invokeAgent(world.node, world.apiKey, agent.id, "How is pet 7?")
    expect(response.status).toBe(200)
    const task = await response.json()
    expect(task.status).toBe("completed")

    const run = await eventually(() =>
      receiver.spans.find((s) => s.name === "task.run" && s.attributes["switchyard.task_id"] === task.id)
    )
    const inTrace = (name: (s: ReceivedSpan) => boolean) =>
      receiver.spans.filter((s) => s.traceId === run.traceId && name(s))
    const server = await eventually(() =>
      inTrace((s) => s.kind === 2 && s.attributes["http.request.method"] === "POST")[0]
    )
    expect(server.attributes["http.route"]).toMatch(/^\/v1\/agents\/:\w+\/invoke$/)
    expect(server.attributes["http.response.status_code"]).toBe(200)
    expect(server.service).toBe("switchyard-test")

    const chats = await eventually(() => {
      const found = inTrace((s) => s.name === "chat scripted")
      return found.length === 2 ? found : undefined
    })
    for (const chat of chats) {
      expect(chat.kind).toBe(3) // client
      expect(chat.attributes).toMatchObject({
        "gen_ai.system": "scripted",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "scripted"
      })
      expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0)
      expect(chat.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0)
    }

    const call = await eventually(() => inTrace((s) => s.name === "connector getPet")[0])
    expect(call.kind).toBe(3)
    expect(call.attributes).toMatchObject({
      "switchyard.connector.id": world.connection.connector_id,
      "switchyard.connection.id": world.connection.id,
      "http.response.status_code": 200
    })
    // the target was told the trace (SWITCHYARD_TRACE_PROPAGATE_UPSTREAM)
    const upstream = world.target.requests[before]!
    expect(upstream.headers["traceparent"]).toBe(`00-${call.traceId}-${call.spanId}-01`)

    // everything hangs under the request's span
    const ids = new Set(receiver.spans.filter((s) => s.traceId === run.traceId).map((s) => s.spanId))
    for (const s of [run, ...chats, call]) expect(ids.has(s.parentSpanId!)).toBe(true)
  })

  it("marks a failed model call's span as an error with the provider's message, under the task's run", async () => {
    openai.script.push({ status: 401, error: "invalid api key for test" })
    const agent = await createAgent(world.node, world.apiKey, {
      name: "Failing model",
      model: { provider: "openai", name: "gpt-4.1-mini" }
    })
    const task = await (await invokeAgent(world.node, world.apiKey, agent.id, "hi")).json()
    expect(task.status).toBe("error")
    const run = await eventually(() =>
      receiver.spans.find((s) => s.name === "task.run" && s.attributes["switchyard.task_id"] === task.id)
    )
    const chat = await eventually(() =>
      receiver.spans.find((s) => s.name === "chat gpt-4.1-mini" && s.traceId === run.traceId)
    )
    expect(chat.parentSpanId).toBe(run.spanId)
    expect(chat.kind).toBe(3)
    expect(chat.status.code).toBe(2)
    expect(chat.status.message).toContain("invalid api key for test")
    expect(chat.events.map((e) => e.name)).toEqual(["exception"])
    expect(chat.attributes).toMatchObject({ "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4.1-mini" })
    // nothing known of a response that never came
    expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeUndefined()
  })

  it("puts a connector invoke's call under the caller's span (traceparent), on the fast path too", async () => {
    const path = `/v1/tools/connectors/${world.connection.connector_id}/connections/${world.connection.id}/getPet`
    const traceId = "0af7651916cd43dd8448eb211c80319c"
    const callerSpanId = "b7ad6b7169203331"
    // the key and the connection in the node's memory: the fast path takes what follows
    const warm = await world.node.fetch(path, {
      method: "POST",
      apiKey: world.apiKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ path_params: { petId: "t0" } })
    })
    await warm.arrayBuffer()
    const response = await world.node.fetch(path, {
      method: "POST",
      apiKey: world.apiKey,
      headers: { "content-type": "application/json", traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ path_params: { petId: "t1" } })
    })
    expect(response.status).toBe(200)
    await response.arrayBuffer()
    const call = await eventually(() =>
      receiver.spans.find((s) => s.name === "connector getPet" && s.traceId === traceId)
    )
    // right under the caller's span: the fast path has no request span of its own (the general stack's would
    // be between), and it went on with the caller's trace
    expect(call.parentSpanId).toBe(callerSpanId)
  })

  it("exports no span for the background polls every node runs (schedules, sweep, shard directory, usage fold)", async () => {
    // each of these ran at least once a second on the node since it started: before, a root span each time
    await new Promise((r) => setTimeout(r, 2500))
    const polls = [
      "min(next_run_at)",
      "FROM shard_directory",
      "knowledge_ingest_queue",
      "status = 'expired'",
      "pg_try_advisory_xact_lock",
      "usage_fold_positions",
      "SELECT id FROM tasks"
    ]
    const statementOf = (s: ReceivedSpan) => String(s.attributes["db.query.text"] ?? s.attributes["db.statement"] ?? "")
    const polled = receiver.spans.filter((s) => polls.some((p) => statementOf(s).includes(p)))
    expect(polled.map(statementOf)).toEqual([])
    // the spans that carry statements are still there for the work that is asked for
    expect(receiver.spans.some((s) => s.name === "sql.execute")).toBe(true)
  })

  it("exports the connector call of a connector invoke, on either stack", async () => {
    const path = `/v1/tools/connectors/${world.connection.connector_id}/connections/${world.connection.id}/getPet`
    for (let i = 0; i < 2; i++) {
      const response = await world.node.fetch(path, {
        method: "POST",
        apiKey: world.apiKey,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ path_params: { petId: `c${i}` } })
      })
      expect(response.status).toBe(200)
      await response.arrayBuffer()
    }
    const calls = await eventually(() => {
      const found = receiver.spans.filter((s) => s.name === "connector getPet")
      return found.length >= 3 ? found : undefined
    })
    expect(calls.length).toBeGreaterThanOrEqual(3)
    // on the wall clock, as every other span: a trace viewer places it inside its request
    for (const c of calls) {
      expect(Math.abs(c.startMs - Date.now())).toBeLessThan(120_000)
      expect(c.endMs).toBeGreaterThanOrEqual(c.startMs)
    }
  })
})

describe("tracing off", () => {
  it("exports nothing when OTEL_SDK_DISABLED is true, even with an endpoint set", async () => {
    const receiver = await startOtlpReceiver()
    const world = await startPetWorld({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_SDK_DISABLED: "true",
      SWITCHYARD_TRACE_PROPAGATE_UPSTREAM: "true"
    })
    try {
      const agent = await toolAgent(world)
      const before = world.target.requests.length
      const response = await invokeAgent(world.node, world.apiKey, agent.id, "How is pet 7?")
      expect((await response.json()).status).toBe("completed")
      await new Promise((r) => setTimeout(r, 500))
      expect(receiver.requests).toEqual([])
      expect(world.target.requests[before]!.headers["traceparent"]).toBeUndefined()
    } finally {
      await world.stop()
      await receiver.close()
    }
  })
})

describe("sampling (OTEL_TRACES_SAMPLER)", () => {
  it("parentbased_traceidratio at 0 drops new traces whole, and keeps a trace its caller sampled", async () => {
    const receiver = await startOtlpReceiver()
    const world = await startPetWorld({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0"
      // the task fast path (the default) takes both invokes: it reads the caller's traceparent as the general
      // stack does
    })
    try {
      const agent = await toolAgent(world)
      const dropped = await (await invokeAgent(world.node, world.apiKey, agent.id, "How is pet 7?")).json()
      expect(dropped.status).toBe("completed")
      const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
      const calledBefore = world.target.requests.length
      const kept = await world.node.fetch(`/v1/agents/${agent.id}/invoke`, {
        method: "POST",
        apiKey: world.apiKey,
        headers: { "content-type": "application/json", traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
        body: JSON.stringify({ input: { text: "How is pet 7?", user: { id: "u1", email: "u1@example.com" } } })
      })
      const task = await kept.json()
      expect(task.status).toBe("completed")
      const run = await eventually(() =>
        receiver.spans.find((s) => s.name === "task.run" && s.attributes["switchyard.task_id"] === task.id)
      )
      expect(run.traceId).toBe(traceId)
      // a sampled trace's connector call tells the target nothing unless SWITCHYARD_TRACE_PROPAGATE_UPSTREAM
      const called = world.target.requests.slice(calledBefore)
      expect(called.length).toBeGreaterThan(0)
      expect(called.map((r) => r.headers["traceparent"])).toEqual(called.map(() => undefined))
      await new Promise((r) => setTimeout(r, 300))
      expect(receiver.spans.filter((s) => s.attributes["switchyard.task_id"] === dropped.id)).toEqual([])
      expect(receiver.spans.every((s) => s.traceId === traceId)).toBe(true)
    } finally {
      await world.stop()
      await receiver.close()
    }
  })
})
