import { describe, expect, it } from "vitest"
import { chatCompletions } from "../../../src/agents/models/ChatCompletions.js"
import type { ModelRequest } from "../../../src/agents/models/ModelProvider.js"
import { baseRequest, callRecording, connectionTo, rejectionOf, useModelServer, weatherTool } from "./harness.js"

describe("Chat Completions", () => {
  const fixture = useModelServer("openai-chat")

  it("streams text through onTextDelta and reads usage from the final chunk", async () => {
    fixture.server.script.push({ text: "It is sunny in Paris.", usage: { input: 900, output: 6, cached: 512 } })
    const { deltas, response } = await callRecording(
      chatCompletions,
      connectionTo(fixture.server.url, fixture.dispatcher),
      {
        ...baseRequest,
        maxOutputTokens: 128
      }
    )

    expect(deltas).toEqual(["It ", "is ", "sunny ", "in ", "Paris."])
    expect(response).toEqual({
      text: "It is sunny in Paris.",
      tool_calls: [],
      usage: { input_tokens: 900, output_tokens: 6, cached_tokens: 512 },
      model: "test-model-2025-01-01",
      finish: "stop"
    })
    const [sent] = fixture.server.requests
    expect(sent!.path).toBe("/v1/chat/completions")
    expect(sent!.headers["authorization"]).toBe("Bearer sk-test-key")
    expect(sent!.body).toEqual({
      model: "test-model",
      messages: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Weather in Paris?" }
      ],
      tools: [{
        type: "function",
        function: { name: "get_weather", description: "Current weather for a city", parameters: weatherTool.parameters }
      }],
      max_tokens: 128,
      stream: true,
      stream_options: { include_usage: true }
    })
  })

  it("asks OpenAI's reasoning models with max_completion_tokens, which is all they take", async () => {
    const connection = connectionTo(fixture.server.url, fixture.dispatcher)
    for (const model of ["o3-mini", "gpt-5-mini", "openai/o4-mini"]) {
      fixture.server.script.push({ text: "Done." })
      const { response } = await callRecording(chatCompletions, connection, {
        ...baseRequest,
        model,
        maxOutputTokens: 128,
        temperature: 1
      })
      expect(response.text).toBe("Done.")
      const sent = fixture.server.requests.at(-1)!.body
      expect(sent).toMatchObject({ model, max_completion_tokens: 128 })
      expect(sent).not.toHaveProperty("max_tokens")
      expect(sent).not.toHaveProperty("temperature")
    }
    // a temperature such a model does not take is still sent: the model's refusal says what to change
    fixture.server.script.push({ text: "unused" })
    const refused = await rejectionOf(
      callRecording(chatCompletions, connection, { ...baseRequest, model: "o3-mini", temperature: 0.2 })
    )
    expect(refused.message).toContain("'temperature' does not support 0.2")
    // any other model keeps max_tokens, the parameter every OpenAI-compatible server knows
    fixture.server.script.push({ text: "Done." })
    await callRecording(chatCompletions, connection, { ...baseRequest, model: "llama3.1", maxOutputTokens: 64 })
    expect(fixture.server.requests.at(-1)!.body).toMatchObject({ model: "llama3.1", max_tokens: 64 })
  })

  it("assembles streamed tool-call fragments, then sends the calls and their results back", async () => {
    fixture.server.script.push(
      {
        tool_calls: [
          { name: "get_weather", arguments: { city: "Paris", unit: "celsius" } },
          { name: "get_weather", arguments: { city: "Lyon" } }
        ]
      },
      { text: "Paris 21, Lyon 24." }
    )
    const connection = connectionTo(fixture.server.url, fixture.dispatcher)
    const first = await callRecording(chatCompletions, connection, baseRequest)
    expect(first.deltas).toEqual([])
    expect(first.response.finish).toBe("tool_calls")
    expect(first.response.text).toBeNull()
    expect(first.response.tool_calls).toEqual([
      { id: "call_r1_0", name: "get_weather", arguments: { city: "Paris", unit: "celsius" } },
      { id: "call_r1_1", name: "get_weather", arguments: { city: "Lyon" } }
    ])

    const followUp: ModelRequest = {
      ...baseRequest,
      messages: [
        ...baseRequest.messages,
        { role: "assistant", text: null, tool_calls: first.response.tool_calls },
        { role: "tool", tool_call_id: "call_r1_0", name: "get_weather", content: "21" },
        { role: "tool", tool_call_id: "call_r1_1", name: "get_weather", content: "24" }
      ]
    }
    const second = await callRecording(chatCompletions, connection, followUp)
    expect(second.response.text).toBe("Paris 21, Lyon 24.")
    expect(fixture.server.requests[1]!.body.messages.slice(2)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_r1_0",
            type: "function",
            function: { name: "get_weather", arguments: "{\"city\":\"Paris\",\"unit\":\"celsius\"}" }
          },
          { id: "call_r1_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Lyon\"}" } }
        ]
      },
      { role: "tool", tool_call_id: "call_r1_0", content: "21" },
      { role: "tool", tool_call_id: "call_r1_1", content: "24" }
    ])
  })

  it("accepts a plain JSON completion from a server that ignores stream", async () => {
    fixture.server.script.push({
      text: "Plain answer",
      ignore_stream: true,
      usage: { input: 10, output: 2, cached: 4 }
    })
    const { deltas, response } = await callRecording(
      chatCompletions,
      connectionTo(fixture.server.url, fixture.dispatcher),
      baseRequest
    )
    expect(deltas).toEqual(["Plain answer"])
    expect(response).toEqual({
      text: "Plain answer",
      tool_calls: [],
      usage: { input_tokens: 10, output_tokens: 2, cached_tokens: 4 },
      model: "test-model-2025-01-01",
      finish: "stop"
    })
  })

  it("parses tool calls from a plain JSON completion too", async () => {
    fixture.server.script.push({
      tool_calls: [{ name: "get_weather", arguments: { city: "Oslo" } }],
      ignore_stream: true
    })
    const { response } = await callRecording(
      chatCompletions,
      connectionTo(fixture.server.url, fixture.dispatcher),
      baseRequest
    )
    expect(response.tool_calls).toEqual([{ id: "call_r1_0", name: "get_weather", arguments: { city: "Oslo" } }])
    expect(response.finish).toBe("tool_calls")
  })

  it("sends no Authorization without a key (local servers) and omits an empty system prompt", async () => {
    fixture.server.script.push({ text: "ok", finish: "length" })
    const { response } = await callRecording(
      chatCompletions,
      connectionTo(fixture.server.url, fixture.dispatcher, { apiKey: undefined }),
      {
        ...baseRequest,
        instructions: "",
        tools: []
      }
    )
    expect(response.finish).toBe("length")
    const [sent] = fixture.server.requests
    expect(sent!.headers["authorization"]).toBeUndefined()
    expect(sent!.body.messages).toEqual([{ role: "user", content: "Weather in Paris?" }])
    expect(sent!.body.tools).toBeUndefined()
  })

  it("turns an error object inside the stream into a retryable ModelError", async () => {
    fixture.server.script.push({ text: "Starting to answer", mid_stream: "error" })
    const error = await rejectionOf(
      callRecording(chatCompletions, connectionTo(fixture.server.url, fixture.dispatcher), baseRequest)
    )
    expect(error).toMatchObject({ name: "ModelError", code: "model_stream_error", retryable: true })
    expect(error.message).toBe("worker crashed")
  })

  it("reports a connection reset mid-stream as model_unreachable (retryable)", async () => {
    fixture.server.script.push({ text: "Starting to answer", mid_stream: "reset" })
    const error = await rejectionOf(
      callRecording(chatCompletions, connectionTo(fixture.server.url, fixture.dispatcher), baseRequest)
    )
    expect(error).toMatchObject({ name: "ModelError", code: "model_unreachable", retryable: true })
  })

  it("stops reading and rejects promptly when aborted mid-stream", async () => {
    fixture.server.script.push({ text: "Starting to answer", mid_stream: "hang" })
    const controller = new AbortController()
    const deltas: Array<string> = []
    const call = chatCompletions.call(connectionTo(fixture.server.url, fixture.dispatcher), baseRequest, {
      signal: controller.signal,
      onTextDelta: (delta) => {
        deltas.push(delta)
        controller.abort()
      }
    })
    const started = Date.now()
    const error = await rejectionOf(call)
    expect(Date.now() - started).toBeLessThan(1000)
    expect(error.name).toBe("AbortError")
    expect(deltas).toEqual(["Starting "])
  })
})
