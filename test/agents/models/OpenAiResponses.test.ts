import { describe, expect, it } from "vitest"
import type { ModelRequest } from "../../../src/agents/models/ModelProvider.js"
import { openAiResponses } from "../../../src/agents/models/OpenAiResponses.js"
import { baseRequest, callRecording, connectionTo, useModelServer, weatherTool } from "./harness.js"

describe("OpenAI Responses API", () => {
  const fixture = useModelServer("openai")

  it("sends instructions, input, tools and limits, and reads text, usage and the served model", async () => {
    fixture.server.script.push({ text: "Sunny in Paris.", usage: { input: 1200, output: 7, cached: 1024 } })
    const { deltas, response } = await callRecording(
      openAiResponses,
      connectionTo(fixture.server.url, fixture.dispatcher),
      {
        ...baseRequest,
        maxOutputTokens: 256,
        temperature: 0.2
      }
    )

    expect(response).toEqual({
      text: "Sunny in Paris.",
      tool_calls: [],
      usage: { input_tokens: 1200, output_tokens: 7, cached_tokens: 1024 },
      model: "test-model-2025-01-01",
      finish: "stop"
    })
    // a listener (onTextDelta) makes the call stream: the text arrives in pieces (test/agents/models/Streaming.test.ts)
    expect(deltas).toEqual(["Sunny ", "in ", "Paris."])
    const [sent] = fixture.server.requests
    expect(sent!.path).toBe("/v1/responses")
    expect(sent!.headers["authorization"]).toBe("Bearer sk-test-key")
    expect(sent!.body).toEqual({
      model: "test-model",
      instructions: "You are terse.",
      input: [{ role: "user", content: [{ type: "input_text", text: "Weather in Paris?" }] }],
      tools: [{
        type: "function",
        name: "get_weather",
        description: "Current weather for a city",
        parameters: weatherTool.parameters,
        strict: false
      }],
      max_output_tokens: 256,
      temperature: 0.2,
      store: false,
      stream: true
    })
  })

  it("returns tool calls, then sends them back with their outputs as input items", async () => {
    fixture.server.script.push({ tool_calls: [{ name: "get_weather", arguments: { city: "Paris" } }] }, {
      text: "21°C."
    })
    const connection = connectionTo(fixture.server.url, fixture.dispatcher)
    const first = await callRecording(openAiResponses, connection, baseRequest)
    expect(first.response.finish).toBe("tool_calls")
    expect(first.response.text).toBeNull()
    expect(first.response.tool_calls).toEqual([{ id: "call_r1_0", name: "get_weather", arguments: { city: "Paris" } }])

    const followUp: ModelRequest = {
      ...baseRequest,
      messages: [
        ...baseRequest.messages,
        { role: "assistant", text: "Checking.", tool_calls: first.response.tool_calls },
        { role: "tool", tool_call_id: "call_r1_0", name: "get_weather", content: "{\"temp_c\":21}" }
      ]
    }
    const second = await callRecording(openAiResponses, connection, followUp)
    expect(second.response).toMatchObject({ text: "21°C.", finish: "stop", tool_calls: [] })
    expect(fixture.server.requests[1]!.body.input).toEqual([
      { role: "user", content: [{ type: "input_text", text: "Weather in Paris?" }] },
      { role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
      { type: "function_call", call_id: "call_r1_0", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
      { type: "function_call_output", call_id: "call_r1_0", output: "{\"temp_c\":21}" }
    ])
  })

  it("omits instructions, tools and the key when there are none, and maps an incomplete answer to length", async () => {
    fixture.server.script.push({ text: "Partial", finish: "length" })
    // without a listener: not streamed, so no `stream` field
    const response = await openAiResponses.call(
      connectionTo(fixture.server.url, fixture.dispatcher, { apiKey: undefined }),
      {
        ...baseRequest,
        instructions: "",
        tools: []
      },
      { signal: new AbortController().signal }
    )
    expect(response.finish).toBe("length")
    const [sent] = fixture.server.requests
    expect(sent!.headers["authorization"]).toBeUndefined()
    expect(Object.keys(sent!.body).sort()).toEqual(["input", "model", "store"])
  })

  it("keeps invalid tool arguments as the raw string", async () => {
    fixture.server.script.push({
      raw: JSON.stringify({
        model: "m",
        status: "completed",
        output: [{ type: "function_call", call_id: "c1", name: "get_weather", arguments: "{city: Paris" }],
        usage: { input_tokens: 3, output_tokens: 2 }
      })
    })
    const { response } = await callRecording(
      openAiResponses,
      connectionTo(fixture.server.url, fixture.dispatcher),
      baseRequest
    )
    expect(response.tool_calls).toEqual([{ id: "c1", name: "get_weather", arguments: "{city: Paris" }])
    expect(response.usage).toEqual({ input_tokens: 3, output_tokens: 2, cached_tokens: 0 })
  })
})
