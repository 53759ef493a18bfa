import { Agent } from "undici"
import { afterAll, describe, expect, it } from "vitest"
import type { Message, ModelRequest } from "../../../src/agents/models/ModelProvider.js"
import { scripted } from "../../../src/agents/models/Scripted.js"
import { baseRequest, callRecording, connectionTo, rejectionOf } from "./harness.js"

describe("Scripted provider", () => {
  const dispatcher = new Agent()
  // never used: the scripted provider makes no HTTP calls
  const connection = connectionTo("http://127.0.0.1:1", dispatcher)
  afterAll(() => dispatcher.close())

  const provider = scripted([
    { tool_calls: [{ name: "get_weather", arguments: { city: "Paris" } }, { name: "get_time", arguments: {} }] },
    { text: "The weather service said: {{last_tool_result}}" }
  ])

  it("plays the turn given by the number of assistant messages, with deterministic call ids", async () => {
    const first = await callRecording(provider, connection, baseRequest)
    expect(first.response).toEqual({
      text: null,
      tool_calls: [
        { id: "call_0_0", name: "get_weather", arguments: { city: "Paris" } },
        { id: "call_0_1", name: "get_time", arguments: {} }
      ],
      usage: expect.objectContaining({ cached_tokens: 0 }),
      model: "scripted",
      finish: "tool_calls"
    })
    // the same conversation gets the same answer: replays see what the first run saw
    expect((await callRecording(provider, connection, baseRequest)).response).toEqual(first.response)

    const messages: Array<Message> = [
      ...baseRequest.messages,
      { role: "assistant", text: null, tool_calls: first.response.tool_calls },
      { role: "tool", tool_call_id: "call_0_0", name: "get_weather", content: "sunny" },
      { role: "tool", tool_call_id: "call_0_1", name: "get_time", content: "noon" }
    ]
    const second = await callRecording(provider, connection, { ...baseRequest, messages })
    expect(second.response).toMatchObject({ text: "The weather service said: noon", finish: "stop", tool_calls: [] })
    // a listener hears the text in about four pieces
    expect(second.deltas).toEqual(["The weather ", "service said: ", "noon"])
  })

  it("puts the task's input where a tool call's string arguments say {{input}}", async () => {
    const perTask = scripted([{
      tool_calls: [{ name: "lookup", arguments: { path_params: { id: "pet-{{input}}" }, tags: ["{{input}}", 3] } }]
    }])
    const request: ModelRequest = { ...baseRequest, messages: [{ role: "user", text: "42" }] }
    const { response } = await callRecording(perTask, connection, request)
    expect(response.tool_calls[0]!.arguments).toEqual({ path_params: { id: "pet-42" }, tags: ["42", 3] })
  })

  it("counts tokens as a quarter of the characters", async () => {
    const request: ModelRequest = {
      model: "any",
      instructions: "12345678",
      messages: [{ role: "user", text: "abcd" }],
      tools: []
    }
    const { response } = await callRecording(scripted([{ text: "x".repeat(10) }]), connection, request)
    expect(response.usage).toEqual({ input_tokens: 3, output_tokens: 3, cached_tokens: 0 })
  })

  it("cuts text at maxOutputTokens and reports length", async () => {
    const { response } = await callRecording(scripted([{ text: "y".repeat(100) }]), connection, {
      ...baseRequest,
      maxOutputTokens: 5
    })
    expect(response.text).toBe("y".repeat(20))
    expect(response.finish).toBe("length")
  })

  it("fails with script_exhausted when the conversation is longer than the script", async () => {
    const messages: Array<Message> = [
      ...baseRequest.messages,
      { role: "assistant", text: "one", tool_calls: [] },
      { role: "user", text: "again" }
    ]
    const error = await rejectionOf(
      callRecording(scripted([{ text: "one" }]), connection, { ...baseRequest, messages })
    )
    expect(error).toMatchObject({ name: "ModelError", code: "script_exhausted", retryable: false })
  })

  it("waits delay_ms, and rejects promptly with an AbortError when aborted meanwhile", async () => {
    const slow = scripted([{ text: "late", delay_ms: 150 }])
    const started = Date.now()
    expect((await callRecording(slow, connection, baseRequest)).response.text).toBe("late")
    expect(Date.now() - started).toBeGreaterThanOrEqual(140)

    const controller = new AbortController()
    setTimeout(() => controller.abort(), 30)
    const abortedAt = Date.now()
    const error = await rejectionOf(
      callRecording(scripted([{ text: "never", delay_ms: 10_000 }]), connection, baseRequest, {
        signal: controller.signal
      })
    )
    expect(error.name).toBe("AbortError")
    expect(Date.now() - abortedAt).toBeLessThan(1000)
  })
})
