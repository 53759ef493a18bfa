import { describe, expect, it } from "vitest"
import { anthropic } from "../../../src/agents/models/Anthropic.js"
import type { ModelRequest } from "../../../src/agents/models/ModelProvider.js"
import { baseRequest, callRecording, connectionTo, rejectionOf, useModelServer, weatherTool } from "./harness.js"

describe("Anthropic Messages", () => {
  const fixture = useModelServer("anthropic")

  it("streams text, counts cache reads into input and cached tokens, and sends the documented request", async () => {
    fixture.server.script.push({ text: "Sunny and mild.", usage: { input: 2000, output: 5, cached: 1500 } })
    const { deltas, response } = await callRecording(anthropic, connectionTo(fixture.server.url, fixture.dispatcher), {
      ...baseRequest,
      temperature: 0
    })

    expect(deltas).toEqual(["Sunny ", "and ", "mild."])
    expect(response).toEqual({
      text: "Sunny and mild.",
      tool_calls: [],
      usage: { input_tokens: 2000, output_tokens: 5, cached_tokens: 1500 },
      model: "test-model-2025-01-01",
      finish: "stop"
    })
    const [sent] = fixture.server.requests
    expect(sent!.path).toBe("/v1/messages")
    expect(sent!.headers["x-api-key"]).toBe("sk-test-key")
    expect(sent!.headers["anthropic-version"]).toBe("2023-06-01")
    expect(sent!.headers["authorization"]).toBeUndefined()
    expect(sent!.body).toEqual({
      model: "test-model",
      max_tokens: 4096,
      system: "You are terse.",
      messages: [{ role: "user", content: [{ type: "text", text: "Weather in Paris?" }] }],
      tools: [{ name: "get_weather", description: "Current weather for a city", input_schema: weatherTool.parameters }],
      temperature: 0,
      stream: true
    })
  })

  it("assembles tool_use input from JSON deltas and merges the tool results into one user turn", async () => {
    fixture.server.script.push(
      {
        text: "Let me check.",
        tool_calls: [
          { name: "get_weather", arguments: { city: "Paris" } },
          { name: "get_weather", arguments: { city: "Rome" } }
        ]
      },
      { text: "Paris 21, Rome 27." }
    )
    const connection = connectionTo(fixture.server.url, fixture.dispatcher)
    const first = await callRecording(anthropic, connection, { ...baseRequest, maxOutputTokens: 300 })
    expect(first.deltas).toEqual(["Let ", "me ", "check."])
    expect(first.response).toMatchObject({
      text: "Let me check.",
      finish: "tool_calls",
      tool_calls: [
        { id: "toolu_r1_0", name: "get_weather", arguments: { city: "Paris" } },
        { id: "toolu_r1_1", name: "get_weather", arguments: { city: "Rome" } }
      ]
    })

    const followUp: ModelRequest = {
      ...baseRequest,
      maxOutputTokens: 300,
      messages: [
        ...baseRequest.messages,
        { role: "assistant", text: first.response.text, tool_calls: first.response.tool_calls },
        { role: "tool", tool_call_id: "toolu_r1_0", name: "get_weather", content: "21" },
        { role: "tool", tool_call_id: "toolu_r1_1", name: "get_weather", content: "27" }
      ]
    }
    const second = await callRecording(anthropic, connection, followUp)
    expect(second.response.text).toBe("Paris 21, Rome 27.")
    const sent = fixture.server.requests[1]!.body
    expect(sent.max_tokens).toBe(300)
    expect(sent.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Weather in Paris?" }] },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_r1_0", name: "get_weather", input: { city: "Paris" } },
          { type: "tool_use", id: "toolu_r1_1", name: "get_weather", input: { city: "Rome" } }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_r1_0", content: "21" },
          { type: "tool_result", tool_use_id: "toolu_r1_1", content: "27" }
        ]
      }
    ])
  })

  it("maps max_tokens to length and accepts a base URL that already ends in /v1", async () => {
    fixture.server.script.push({ text: "Truncat", finish: "length" })
    const { response } = await callRecording(
      anthropic,
      connectionTo(`${fixture.server.url}/v1/`, fixture.dispatcher),
      baseRequest
    )
    expect(response.finish).toBe("length")
    expect(fixture.server.requests[0]!.path).toBe("/v1/messages")
  })

  it("turns an error event in the stream into a ModelError judged by its type", async () => {
    fixture.server.script.push({ text: "Starting to answer", mid_stream: "error" })
    const error = await rejectionOf(
      callRecording(anthropic, connectionTo(fixture.server.url, fixture.dispatcher), baseRequest)
    )
    expect(error).toMatchObject({ code: "model_stream_error", status: 529, retryable: true, message: "Overloaded" })
  })

  it("accepts a whole JSON message from a proxy that does not stream", async () => {
    fixture.server.script.push({
      tool_calls: [{ name: "get_weather", arguments: { city: "Oslo" } }],
      ignore_stream: true,
      usage: { input: 50, output: 9, cached: 20 }
    })
    const { response } = await callRecording(
      anthropic,
      connectionTo(fixture.server.url, fixture.dispatcher),
      baseRequest
    )
    expect(response).toEqual({
      text: null,
      tool_calls: [{ id: "toolu_r1_0", name: "get_weather", arguments: { city: "Oslo" } }],
      usage: { input_tokens: 50, output_tokens: 9, cached_tokens: 20 },
      model: "test-model-2025-01-01",
      finish: "tool_calls"
    })
  })

  it("stops reading and rejects promptly when aborted mid-stream", async () => {
    fixture.server.script.push({ text: "Starting to answer", mid_stream: "hang" })
    const controller = new AbortController()
    const call = anthropic.call(connectionTo(fixture.server.url, fixture.dispatcher), baseRequest, {
      signal: controller.signal,
      onTextDelta: () => controller.abort()
    })
    const started = Date.now()
    const error = await rejectionOf(call)
    expect(Date.now() - started).toBeLessThan(1000)
    expect(error.name).toBe("AbortError")
  })
})
