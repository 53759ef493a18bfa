/**
 * Streamed model calls (issue 22, streamed invoke): a call with a listener (`onTextDelta`) hears the text as
 * the server sends it, and its result is the one the same answer gives without a listener, usage included,
 * so cost and budgets do not depend on whether someone watched.
 */
import { describe, expect, it } from "vitest"
import { anthropic } from "../../../src/agents/models/Anthropic.js"
import { chatCompletions } from "../../../src/agents/models/ChatCompletions.js"
import type { ModelProvider } from "../../../src/agents/models/ModelProvider.js"
import { ModelError } from "../../../src/agents/models/ModelProvider.js"
import { openAiResponses } from "../../../src/agents/models/OpenAiResponses.js"
import { scripted } from "../../../src/agents/models/Scripted.js"
import type { ModelServerKind } from "../../support/ModelServers.js"
import { baseRequest, connectionTo, rejectionOf, useModelServer } from "./harness.js"

const PROVIDERS: ReadonlyArray<readonly [ModelServerKind, ModelProvider]> = [
  ["openai", openAiResponses],
  ["openai-chat", chatCompletions],
  ["anthropic", anthropic]
]

const TEXT = "It is sunny in Paris today, with a light breeze."

for (const [kind, provider] of PROVIDERS) {
  describe(`streamed ${kind} calls`, () => {
    const fixture = useModelServer(kind)

    it("a server that reports no usage, listened to or not, gives 0 counts marked not reported", async () => {
      const connection = connectionTo(fixture.server.url, fixture.dispatcher)
      fixture.server.script.push({ text: TEXT, omit_usage: true }, { text: TEXT, omit_usage: true })
      const plain = await provider.call(connection, baseRequest, { signal: new AbortController().signal })
      const streamed = await provider.call(connection, baseRequest, {
        signal: new AbortController().signal,
        onTextDelta: () => {}
      })
      for (const response of [plain, streamed]) {
        expect(response.usage).toEqual({ input_tokens: 0, output_tokens: 0, cached_tokens: 0, reported: false })
        expect(response.text).toBe(TEXT)
      }
    })

    it("a listened call gives the same result and usage as an unlistened one, its text arriving in pieces before the end", async () => {
      const connection = connectionTo(fixture.server.url, fixture.dispatcher)
      const usage = { input: 900, output: 12, cached: 512 }
      fixture.server.script.push({ text: TEXT, usage }, { text: TEXT, usage, frame_delay_ms: 20 })
      const plain = await provider.call(connection, baseRequest, { signal: new AbortController().signal })

      const deltas: Array<{ text: string; at: number }> = []
      const streamed = await provider.call(connection, baseRequest, {
        signal: new AbortController().signal,
        onTextDelta: (text) => deltas.push({ text, at: performance.now() })
      })
      const ended = performance.now()
      expect(streamed).toEqual(plain)
      expect(streamed.usage).toEqual({ input_tokens: 900, output_tokens: 12, cached_tokens: 512 })
      expect(deltas.map((d) => d.text).join("")).toBe(TEXT)
      expect(deltas.length).toBeGreaterThan(3)
      // the first piece came while the server was still sending (20 ms between frames)
      expect(deltas[0]!.at).toBeLessThan(ended - 40)

      const sent = fixture.server.requests.at(-1)!.body
      expect(sent.stream).toBe(true)
      if (kind === "openai-chat") expect(sent.stream_options).toEqual({ include_usage: true })
    })

    it("tool calls come through a listened call whole", async () => {
      const connection = connectionTo(fixture.server.url, fixture.dispatcher)
      const turn = {
        tool_calls: [{ name: "get_weather", arguments: { city: "Paris", days: [1, 2] } }],
        usage: { input: 80, output: 9 }
      }
      fixture.server.script.push(turn, turn)
      const plain = await provider.call(connection, baseRequest, { signal: new AbortController().signal })
      const deltas: Array<string> = []
      const streamed = await provider.call(connection, baseRequest, {
        signal: new AbortController().signal,
        onTextDelta: (d) => deltas.push(d)
      })
      expect(streamed.tool_calls.map((c) => [c.name, c.arguments])).toEqual([["get_weather", {
        city: "Paris",
        days: [1, 2]
      }]])
      expect(streamed.finish).toBe("tool_calls")
      expect({ ...streamed, tool_calls: [] }).toEqual({ ...plain, tool_calls: [] })
      expect(deltas).toEqual([])
    })

    it("an error event in the middle of a listened stream fails the call as retryable", async () => {
      fixture.server.script.push({ text: TEXT, mid_stream: "error" })
      const deltas: Array<string> = []
      const error = await rejectionOf(provider.call(connectionTo(fixture.server.url, fixture.dispatcher), baseRequest, {
        signal: new AbortController().signal,
        onTextDelta: (d) => deltas.push(d)
      }))
      expect(error).toBeInstanceOf(ModelError)
      expect(error.code).toBe("model_stream_error")
      expect(error.retryable).toBe(true)
    })
  })
}

describe("streamed OpenAI Responses calls", () => {
  const fixture = useModelServer("openai")

  it("an unlistened call is not streamed: no `stream` field, a JSON answer (nothing gets slower)", async () => {
    fixture.server.script.push({ text: TEXT })
    const response = await openAiResponses.call(
      connectionTo(fixture.server.url, fixture.dispatcher),
      baseRequest,
      { signal: new AbortController().signal }
    )
    expect(response.text).toBe(TEXT)
    expect(fixture.server.requests[0]!.body.stream).toBeUndefined()
    expect(fixture.server.requests[0]!.headers["accept"]).toBe("application/json")
  })

  it("a listened stream that stops sending is ended by the caller's signal, never taken for an answer", async () => {
    fixture.server.script.push({ text: TEXT, mid_stream: "hang" })
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(new Error("timed out")), 300)
    const error = await rejectionOf(openAiResponses.call(
      connectionTo(fixture.server.url, fixture.dispatcher),
      baseRequest,
      { signal: controller.signal, onTextDelta: () => undefined }
    ))
    clearTimeout(timer)
    // a hung stream is ended by the caller's signal, never taken for an answer
    expect(error.message).toBe("timed out")
  })

  it("a server that ignores `stream` answers in one piece, heard whole", async () => {
    fixture.server.script.push({ text: TEXT, ignore_stream: true })
    const deltas: Array<string> = []
    const response = await openAiResponses.call(connectionTo(fixture.server.url, fixture.dispatcher), baseRequest, {
      signal: new AbortController().signal,
      onTextDelta: (d) => deltas.push(d)
    })
    expect(response.text).toBe(TEXT)
    expect(deltas).toEqual([TEXT])
  })
})

describe("streamed scripted calls", () => {
  const connection = { baseUrl: "scripted:", apiKey: undefined, dispatcher: undefined as never }

  it("a listener hears the text in a few pieces spread over delay_ms; the result is the unlistened one", async () => {
    const provider = scripted([{ text: TEXT, delay_ms: 200 }])
    const started = performance.now()
    const plain = await provider.call(connection, baseRequest, { signal: new AbortController().signal })
    expect(performance.now() - started).toBeGreaterThanOrEqual(190)

    const at: Array<number> = []
    const pieces: Array<string> = []
    const begun = performance.now()
    const streamed = await provider.call(connection, baseRequest, {
      signal: new AbortController().signal,
      onTextDelta: (d) => {
        pieces.push(d)
        at.push(performance.now() - begun)
      }
    })
    expect(streamed).toEqual(plain)
    expect(pieces.join("")).toBe(TEXT)
    expect(pieces.length).toBe(4)
    expect(at[0]!).toBeLessThan(150)
    expect(performance.now() - begun).toBeGreaterThanOrEqual(190)
  })
})
