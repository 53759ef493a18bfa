/**
 * A deterministic model for tests and demos: it plays a fixed script without any HTTP. The turn played is
 * the number of assistant messages already in the conversation, so a replayed or resumed agent run gets
 * exactly the answers it got the first time.
 */
import { type Message, ModelError, type ModelProvider, type ModelResponse } from "./ModelProvider.js"
import { serializeArguments } from "./WireJson.js"

export type ScriptTurn =
  | { readonly text: string; readonly delay_ms?: number }
  | {
    readonly tool_calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>
    readonly delay_ms?: number
  }

// rough, provider-neutral token arithmetic: enough to exercise budgets, not to mimic a tokenizer
const tokens = (chars: number) => Math.ceil(chars / 4)

const messageChars = (message: Message): number => {
  switch (message.role) {
    case "user":
      return message.text.length
    case "assistant":
      return (message.text?.length ?? 0) +
        message.tool_calls.reduce((sum, call) => sum + call.name.length + serializeArguments(call.arguments).length, 0)
    case "tool":
      return message.content.length
  }
}

// rejects with the signal's reason (an AbortError DOMException for a plain `abort()`), as undici does
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve()
    }, ms)
    signal.addEventListener("abort", onAbort, { once: true })
  })

/** `{{input}}` in a string argument becomes the task's input text: one script, a different call per task. */
const withInput = (value: unknown, input: string): unknown =>
  typeof value === "string"
    ? value.replaceAll("{{input}}", input)
    : Array.isArray(value)
    ? value.map((v) => withInput(v, input))
    : typeof value === "object" && value !== null
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withInput(v, input)]))
    : value

/** A streamed answer's pieces: about four, split after words, as real servers split text. */
const pieces = (text: string): Array<string> => {
  const words = text.match(/\S+\s*|\s+/g) ?? []
  const size = Math.max(1, Math.ceil(words.length / 4))
  const out: Array<string> = []
  for (let i = 0; i < words.length; i += size) out.push(words.slice(i, i + size).join(""))
  return out
}

export const scripted = (script: ReadonlyArray<ScriptTurn>): ModelProvider => ({
  call: async (_connection, request, { onTextDelta, signal }): Promise<ModelResponse> => {
    signal.throwIfAborted()
    const turn = request.messages.filter((message) => message.role === "assistant").length
    const step = script[turn]
    if (step === undefined) {
      throw new ModelError({
        code: "script_exhausted",
        message: `the script has ${script.length} turn(s); turn ${turn + 1} was requested`,
        retryable: false
      })
    }
    const delay = step.delay_ms ?? 0
    // a listener (a streamed invoke) hears the text in pieces across the delay; otherwise it all comes after it
    const streamed = onTextDelta !== undefined && "text" in step
    if (delay > 0 && !streamed) await sleep(delay, signal)
    const inputChars = request.instructions.length +
      (request.tools.length > 0 ? JSON.stringify(request.tools).length : 0) +
      request.messages.reduce((sum, message) => sum + messageChars(message), 0)
    const usage = (outputChars: number) => ({
      input_tokens: tokens(inputChars),
      output_tokens: tokens(outputChars),
      cached_tokens: 0
    })

    if ("tool_calls" in step) {
      const input = request.messages.find((message) => message.role === "user")?.text ?? ""
      const calls = step.tool_calls.map((call, index) => ({
        id: `call_${turn}_${index}`,
        name: call.name,
        arguments: withInput(call.arguments, input)
      }))
      const outputChars = calls.reduce(
        (sum, call) => sum + call.name.length + serializeArguments(call.arguments).length,
        0
      )
      return { text: null, tool_calls: calls, usage: usage(outputChars), model: "scripted", finish: "tool_calls" }
    }

    const lastTool = [...request.messages].reverse().find((message) => message.role === "tool")
    let text = step.text.replaceAll("{{last_tool_result}}", lastTool?.role === "tool" ? lastTool.content : "")
    let finish: ModelResponse["finish"] = "stop"
    // honour the output limit like a real model would, so "length" handling can be tested too
    if (request.maxOutputTokens !== undefined && tokens(text.length) > request.maxOutputTokens) {
      text = text.slice(0, request.maxOutputTokens * 4)
      finish = "length"
    }
    if (streamed) {
      const parts = pieces(text)
      for (const part of parts) {
        if (delay > 0) await sleep(delay / Math.max(parts.length, 1), signal)
        signal.throwIfAborted()
        onTextDelta!(part)
      }
      if (parts.length === 0 && delay > 0) await sleep(delay, signal)
    }
    return { text, tool_calls: [], usage: usage(text.length), model: "scripted", finish }
  }
})
