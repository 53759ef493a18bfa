/**
 * The streamed invoke (issue 22): `POST /v1/agents/{id}/invoke` with `Accept: text/event-stream` streams the
 * task's events, as `GET /v1/tasks/{id}/events` frames them, with the model's text as `task.output.delta`
 * events (no `id:`), and ends after the task's end. Without the header nothing changes.
 */
import { Schema } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Event } from "../../schema/Events.js"
import { TaskOutputDelta } from "../../schema/InvokeStream.js"
import { createAgent, invokeAgent, startPetWorld, waitForTask } from "../agents/support.js"
import { json } from "../connectors/support.js"
import { type ModelServer, startModelServer } from "../support/ModelServers.js"
import { eventually } from "../webhooks/support.js"
import { readEventStream } from "./support.js"

let world: Awaited<ReturnType<typeof startPetWorld>>
let model: ModelServer
beforeAll(async () => {
  world = await startPetWorld()
  model = await startModelServer("openai")
  const set = await world.node.fetch("/v1/model-providers/openai", {
    ...json({ api_key: "sk-streams", base_url: model.url }),
    method: "PUT",
    apiKey: world.apiKey
  })
  expect(set.status).toBe(200)
})
afterAll(async () => {
  await world?.stop()
  await model?.close()
})

const decodeEvent = Schema.decodeUnknownSync(Event)
const decodeDelta = Schema.decodeUnknownSync(TaskOutputDelta)

interface Received {
  readonly id: string
  readonly event: string
  readonly data: any
}

const SSE = { accept: "text/event-stream" }

/** A streamed invoke, read to its end (or until `until` says stop); each event decoded with its schema. */
const streamedInvoke = async (
  agentId: string,
  text: string,
  options: { headers?: Record<string, string>; until?: (e: Received) => boolean } = {}
) => {
  const response = await invokeAgent(world.node, world.apiKey, agentId, text, {
    headers: { ...SSE, ...options.headers }
  })
  const events: Array<Received> = []
  if (response.status !== 200) return { response, events, end: "refused" as const }
  const end = await readEventStream(response, (e) => {
    const data = JSON.parse(e.data)
    if (e.event === "task.output.delta") decodeDelta(data)
    else decodeEvent(data)
    events.push({ id: e.id, event: e.event, data })
    return options.until?.(events.at(-1)!) ?? false
  })
  return { response, events, end }
}

const scriptedAgent = (name: string, script: Array<unknown>) =>
  createAgent(world.node, world.apiKey, {
    name,
    model: { provider: "scripted", script },
    skills: [{ connection_id: world.connection.id, operation_ids: ["getPet"] }]
  })

describe("streamed invoke", () => {
  it("streams the task's events with the model's text between them, framed as the task's event stream, and ends after its end", async () => {
    const agent = await scriptedAgent("streamed", [
      { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
      { text: "Rex is a good dog who likes long walks in the park.", delay_ms: 200 }
    ])
    const { end, events, response } = await streamedInvoke(agent.id, "which pet?")
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/event-stream")
    expect(response.headers.get("cache-control")).toBe("no-cache")
    expect(response.headers.get("x-accel-buffering")).toBe("no")
    expect(end).toBe("ended")

    const logged = events.filter((e) => e.event !== "task.output.delta")
    const deltas = events.filter((e) => e.event === "task.output.delta")
    // the first event names the task; its end is the last
    expect(logged[0]!.event).toBe("task.created")
    const taskId = logged[0]!.data.data.task_id
    expect(response.headers.get("location")).toBe(`/v1/tasks/${taskId}`)
    expect(events.at(-1)!.event).toBe("task.completed")
    expect(events.at(-1)!.data.data.error_code).toBeNull()
    expect(logged.map((e) => e.event)).toEqual([
      "task.created",
      "task.started",
      "task.model_call",
      "task.tool_call",
      "task.model_call",
      "task.completed"
    ])

    // deltas: not in the log (no id), the answer in pieces, before the model call they belong to
    expect(deltas.length).toBe(4)
    expect(deltas.every((d) => d.id === "")).toBe(true)
    expect(deltas.map((d) => d.data.data.text).join("")).toBe("Rex is a good dog who likes long walks in the park.")
    expect(deltas.every((d) => d.data.data.task_id === taskId && d.data.data.step === 2)).toBe(true)
    const at = (e: Received) => events.indexOf(e)
    const secondCall = logged.filter((e) => e.event === "task.model_call")[1]!
    expect(deltas.every((d) => at(d) > at(logged[0]!) && at(d) < at(secondCall))).toBe(true)
    expect(logged.at(-1)!.data.data.result).toBe("Rex is a good dog who likes long walks in the park.")

    // the same events, ids and framing as the task's own stream
    const again = await world.node.fetch(`/v1/tasks/${taskId}/events`, { apiKey: world.apiKey })
    const replayed: Array<Received> = []
    await readEventStream(again, (e) => void replayed.push({ id: e.id, event: e.event, data: JSON.parse(e.data) }))
    expect(replayed).toEqual(logged)
  })

  it("a step's text comes after the tool calls of the step before it, even when the model answers at once", async () => {
    const text = "Rex is a good dog who likes long walks in the park."
    const agent = await scriptedAgent("streamed-in-order", [
      { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }] },
      { text }
    ])
    const { end, events } = await streamedInvoke(agent.id, "which pet?")
    expect(end).toBe("ended")
    const deltas = events.filter((e) => e.event === "task.output.delta")
    expect(deltas.map((d) => d.data.data.text).join("")).toBe(text)
    const toolCall = events.findIndex((e) => e.event === "task.tool_call")
    expect(toolCall).toBeGreaterThan(0)
    expect(deltas.every((d) => events.indexOf(d) > toolCall)).toBe(true)
  })

  it("a task that ends before the stream's first read still has its text after task.created and before its end", async () => {
    const text = "Said before anyone could read the log."
    const agent = await scriptedAgent("streamed-early", [{ text, delay_ms: 40 }])
    // a transaction with an id below the task's: no read passes it (EventRepo.read), so the stream's first read
    // comes after the task's end and holds all of its events, while the deltas wait for task.created
    const blocker = new pg.Client({ connectionString: world.node.databaseUrl })
    await blocker.connect()
    let streamed: ReturnType<typeof streamedInvoke> | undefined
    try {
      await blocker.query("BEGIN")
      await blocker.query("SELECT pg_current_xact_id()")
      streamed = streamedInvoke(agent.id, "hello?")
      // the case under test: the task ended while no read could see its events
      await eventually(async () => {
        const page = await (await world.node.fetch(`/v1/tasks?agent_id=${agent.id}`, { apiKey: world.apiKey })).json()
        return page.items.some((t: any) => t.status === "completed") || undefined
      }, 5_000)
    } finally {
      await blocker.query("COMMIT").catch(() => undefined)
      await blocker.end()
    }
    const { end, events } = await streamed!
    expect(end).toBe("ended")
    const at = (type: string) => events.findIndex((e) => e.event === type)
    const deltas = events.filter((e) => e.event === "task.output.delta")
    expect(deltas.map((d) => d.data.data.text).join("")).toBe(text)
    expect(events[0]!.event).toBe("task.created")
    expect(events.at(-1)!.event).toBe("task.completed")
    expect(deltas.every((d) => events.indexOf(d) > 0 && events.indexOf(d) < at("task.model_call"))).toBe(true)
  })

  it("an OpenAI model streams only while someone listens; the streamed task records the same usage and cost as a synchronous one", async () => {
    const agent = await createAgent(world.node, world.apiKey, {
      name: "openai-streamed",
      model: { provider: "openai", name: "gpt-test" }
    })
    const text = "Paris is sunny today with a light breeze from the west."
    const turn = { text, usage: { input: 300, output: 14, cached: 128 }, frame_delay_ms: 10 }
    model.script.push(turn, turn)

    const sync = await invokeAgent(world.node, world.apiKey, agent.id, "weather?")
    expect(sync.status).toBe(200)
    const syncTask = await sync.json()
    expect(model.requests.at(-1)!.body.stream).toBeUndefined()

    const { events } = await streamedInvoke(agent.id, "weather?")
    expect(model.requests.at(-1)!.body.stream).toBe(true)
    const deltas = events.filter((e) => e.event === "task.output.delta").map((e) => e.data.data.text)
    expect(deltas.length).toBeGreaterThan(5)
    expect(deltas.join("")).toBe(text)
    const streamedCall = events.find((e) => e.event === "task.model_call")!.data.data
    const ended = events.at(-1)!.data.data
    expect(ended.result).toBe(syncTask.result)

    const usage = async (
      taskId: string
    ) => (await (await world.node.fetch(`/v1/tasks/${taskId}/llm_usage`, { apiKey: world.apiKey })).json())
    const [a, b] = [await usage(syncTask.id), await usage(ended.task_id)]
    const strip = (u: any) =>
      JSON.parse(JSON.stringify(u, (k, v) => (["task_id", "at", "seq"].includes(k) ? undefined : v)))
    expect(strip(b)).toEqual(strip(a))
    expect(streamedCall).toMatchObject({ input_tokens: 300, output_tokens: 14, cached_tokens: 128 })
  })

  it("a model call that fails after part of its text was streamed is not tried again: the client would hear it twice", async () => {
    const agent = await createAgent(world.node, world.apiKey, {
      name: "openai-broken-stream",
      model: { provider: "openai", name: "gpt-test" }
    })
    model.script.push({ text: "The first try breaks off.", mid_stream: "error" }, { text: "Not asked for." })
    const before = model.requests.length
    const { events } = await streamedInvoke(agent.id, "weather?")
    const deltas = events.filter((e) => e.event === "task.output.delta").map((e) => e.data.data.text)
    expect(deltas.join("")).toBe("The ")
    const ended = events.at(-1)!.data.data
    expect(ended.status).toBe("error")
    expect(ended.result).toBe(
      "The model call failed (model_stream_error): The server had an error (not tried again: part of its text " +
        "had been streamed)"
    )
    // the event log's end carries the task's error code
    expect(ended.error_code).toBe("model_error")
    expect(model.requests.length).toBe(before + 1)
    model.script.length = 0
  })

  it("a client that leaves mid-stream does not stop the task, and its later model calls are no longer streamed", async () => {
    const agent = await createAgent(world.node, world.apiKey, {
      name: "openai-left",
      model: { provider: "openai", name: "gpt-test" },
      skills: [{ connection_id: world.connection.id, operation_ids: ["getPet"] }]
    })
    model.script.push(
      { tool_calls: [{ name: "getPet", arguments: { path_params: { petId: "7" } } }], delay_ms: 300 },
      { text: "Rex, a dog.", delay_ms: 300 }
    )
    const before = model.requests.length
    const { end, events } = await streamedInvoke(agent.id, "which pet?", { until: (e) => e.event === "task.started" })
    expect(end).toBe("stopped")
    const taskId = events[0]!.data.data.task_id
    const task = await waitForTask(world.node, world.apiKey, taskId)
    expect(task.status).toBe("completed")
    expect(task.result).toBe("Rex, a dog.")
    expect(model.requests.slice(before).map((r) => r.body.stream)).toEqual([true, undefined])
  })

  it("without Accept: text/event-stream nothing changes: synchronous JSON, and ?asynchronous=true a 202 even with it", async () => {
    const agent = await scriptedAgent("plain", [{ text: "hello" }, { text: "hello" }])
    const sync = await invokeAgent(world.node, world.apiKey, agent.id, "hi", { headers: { accept: "*/*" } })
    expect(sync.status).toBe(200)
    expect(sync.headers.get("content-type")).toContain("application/json")
    expect((await sync.json()).result).toBe("hello")

    const accepted = await invokeAgent(world.node, world.apiKey, agent.id, "hi", { async: true, headers: SSE })
    expect(accepted.status).toBe(202)
    expect(accepted.headers.get("content-type")).toContain("application/json")
    expect((await accepted.json()).status).toBe("pending")
  })

  it("a refused streamed invoke is answered with the JSON error before any stream: unknown agent 404, bad body 400", async () => {
    const missing = await invokeAgent(world.node, world.apiKey, "00000000-0000-7000-8000-000000000000", "hi", {
      headers: SSE
    })
    expect(missing.status).toBe(404)
    expect((await missing.json()).error.code).toBe("not_found")

    const agent = await scriptedAgent("refused", [{ text: "x" }])
    const bad = await invokeAgent(world.node, world.apiKey, agent.id, "hi", { headers: SSE, body: { input: {} } })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error.code).toBe("validation_failed")
  })

  it("an Idempotency-Key seen before streams that task's events again, from its first", async () => {
    const agent = await scriptedAgent("idempotent", [{ text: "once" }, { text: "twice" }])
    const headers = { "idempotency-key": `k-${agent.id}` }
    const first = await streamedInvoke(agent.id, "hi", { headers })
    const second = await streamedInvoke(agent.id, "hi", { headers })
    const logged = (r: typeof first) => r.events.filter((e) => e.event !== "task.output.delta")
    expect(logged(second)).toEqual(logged(first))
    expect(logged(second).at(-1)!.data.data.result).toBe("once")
  })
})
