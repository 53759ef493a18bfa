/**
 * OpenAI-compatible Chat Completions (`POST {baseUrl}/chat/completions`), the lingua franca of self-hosted
 * servers (vLLM, Ollama, llama.cpp, LM Studio, LiteLLM). Always asks for a stream, because that is how
 * text reaches the user while it is generated, but accepts a plain JSON completion from servers that
 * ignore `stream`.
 */
import { randomUUID } from "node:crypto"
import { badResponse, bodyChunks, type ModelHttpResponse, parseJsonObject, postJson, readText } from "./ModelHttp.js"
import { type Message, ModelError, type ModelProvider, type ModelRequest, type ModelResponse } from "./ModelProvider.js"
import { serverSentEvents } from "./ServerSentEvents.js"
import {
  asArray,
  asCount,
  asRecord,
  asString,
  type JsonRecord,
  parseArguments,
  serializeArguments,
  tryParseJson
} from "./WireJson.js"

const chatMessage = (message: Message): JsonRecord => {
  switch (message.role) {
    case "user":
      return { role: "user", content: message.text }
    case "assistant":
      return {
        role: "assistant",
        // null content is only valid beside tool calls
        content: message.text ?? (message.tool_calls.length > 0 ? null : ""),
        // OpenAI rejects an empty tool_calls array, so a text-only turn has none
        ...(message.tool_calls.length > 0
          ? {
            tool_calls: message.tool_calls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: serializeArguments(call.arguments) }
            }))
          }
          : {})
      }
    case "tool":
      return { role: "tool", tool_call_id: message.tool_call_id, content: message.content }
  }
}

/**
 * OpenAI's reasoning models (o1, o3, o4-mini, gpt-5…) refuse `max_tokens` (their limit, `max_completion_tokens`,
 * counts the reasoning too) and any temperature but the default; other servers know only `max_tokens`.
 */
const REASONING_MODEL = /^(?:openai\/)?(?:o\d|gpt-5)/

export const chatBody = (request: ModelRequest): JsonRecord => {
  const reasoning = REASONING_MODEL.test(request.model)
  return {
    model: request.model,
    messages: [
      ...(request.instructions !== "" ? [{ role: "system", content: request.instructions }] : []),
      ...request.messages.map(chatMessage)
    ],
    ...(request.tools.length > 0
      ? {
        tools: request.tools.map((tool) => ({
          type: "function",
          function: { name: tool.name, description: tool.description, parameters: tool.parameters }
        }))
      }
      : {}),
    ...(request.maxOutputTokens === undefined
      ? {}
      : reasoning
      ? { max_completion_tokens: request.maxOutputTokens }
      : { max_tokens: request.maxOutputTokens }),
    ...(request.temperature === undefined || (reasoning && request.temperature === 1)
      ? {}
      : { temperature: request.temperature }),
    stream: true,
    // without this the stream carries no token counts, and budgets need them
    stream_options: { include_usage: true }
  }
}

const FINISH: Record<string, ModelResponse["finish"]> = {
  stop: "stop",
  tool_calls: "tool_calls",
  function_call: "tool_calls",
  length: "length",
  content_filter: "content_filter"
}

interface PartialCall {
  id: string
  name: string
  args: string
}

/** Collects a completion, from stream chunks or from one whole completion, into a `ModelResponse`. */
class Completion {
  text = ""
  readonly calls = new Map<number, PartialCall>()
  finish: string | undefined = undefined
  usage: JsonRecord | undefined = undefined
  model: string | undefined = undefined

  constructor(readonly requestedModel: string, readonly onTextDelta: ((delta: string) => void) | undefined) {}

  /** One chunk of a stream, or (`whole`) a non-streamed completion whose choice holds `message`. */
  apply(json: JsonRecord, whole: boolean) {
    const error = json["error"]
    if (error !== undefined && error !== null) {
      // vLLM and LiteLLM report failures after the 200 has been sent as an error object in the stream
      throw new ModelError({
        code: "model_stream_error",
        message: asString(asRecord(error)?.["message"]) ?? asString(error) ?? "error in the model stream",
        retryable: true
      })
    }
    this.model = asString(json["model"]) ?? this.model
    this.usage = asRecord(json["usage"]) ?? this.usage
    const choice = asRecord(asArray(json["choices"])[0])
    if (choice === undefined) return
    this.finish = asString(choice["finish_reason"]) ?? this.finish
    const delta = asRecord(choice[whole ? "message" : "delta"])
    const content = asString(delta?.["content"])
    if (content !== undefined && content !== "") {
      this.text += content
      this.onTextDelta?.(content)
    }
    asArray(delta?.["tool_calls"]).forEach((raw, position) => {
      const fragment = asRecord(raw)
      if (fragment !== undefined) this.addCall(fragment, whole ? position : undefined)
    })
  }

  private addCall(fragment: JsonRecord, position: number | undefined) {
    const id = asString(fragment["id"])
    // `index` identifies a call across chunks; servers that omit it send each call whole, with its id
    const index = typeof fragment["index"] === "number"
      ? fragment["index"]
      : position ?? [...this.calls].find(([, call]) => id !== undefined && call.id === id)?.[0] ?? this.calls.size
    const call = this.calls.get(index) ?? { id: "", name: "", args: "" }
    this.calls.set(index, call)
    const fn = asRecord(fragment["function"])
    if (id !== undefined && id !== "") call.id = id
    const name = asString(fn?.["name"])
    // the name arrives once, but some servers repeat it (or send "" first); the first real one wins
    if (name !== undefined && call.name === "") call.name = name
    const args = fn?.["arguments"]
    // arguments come as JSON text in fragments; a few servers send an already parsed object
    if (typeof args === "string") call.args += args
    else if (args !== undefined && args !== null) call.args += JSON.stringify(args)
  }

  result(): ModelResponse {
    const toolCalls = [...this.calls].sort(([a], [b]) => a - b).map(([index, call]) => {
      if (call.name === "") throw badResponse("tool call without a function name")
      // some servers omit ids; ours only has to be unique in the conversation and match the result we send back
      const id = call.id === "" ? `call_${randomUUID().replaceAll("-", "").slice(0, 16)}_${index}` : call.id
      return { id, name: call.name, arguments: parseArguments(call.args) }
    })
    const mapped = this.finish === undefined ? "other" : FINISH[this.finish] ?? "other"
    return {
      text: this.text === "" ? null : this.text,
      tool_calls: toolCalls,
      usage: {
        input_tokens: asCount(this.usage?.["prompt_tokens"], "usage.prompt_tokens"),
        output_tokens: asCount(this.usage?.["completion_tokens"], "usage.completion_tokens"),
        cached_tokens: asCount(
          asRecord(this.usage?.["prompt_tokens_details"])?.["cached_tokens"],
          "usage.prompt_tokens_details.cached_tokens"
        ),
        ...(this.usage === undefined ? { reported: false as const } : {})
      },
      model: this.model ?? this.requestedModel,
      // some servers (older Ollama) finish tool-calling turns with "stop"
      finish: toolCalls.length > 0 && mapped === "stop" ? "tool_calls" : mapped
    }
  }
}

const readStream = async (
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  signal: AbortSignal,
  completion: Completion
): Promise<ModelResponse> => {
  let done = false
  // reading on after [DONE] (instead of breaking) lets the connection be reused: servers end right after it
  for await (const event of serverSentEvents(chunks)) {
    // events already buffered must not reach onTextDelta once the caller has given up
    signal.throwIfAborted()
    if (done) continue
    if (event.data.trim() === "[DONE]") {
      done = true
      continue
    }
    const json = asRecord(tryParseJson(event.data))
    if (json === undefined) throw badResponse("Chat Completions stream carried an event that is not a JSON object")
    completion.apply(json, false)
  }
  if (!done && completion.finish === undefined) {
    // the server closed cleanly but mid-answer (a crashed worker behind a proxy); the next attempt may work
    throw badResponse("Chat Completions stream ended before the completion was finished", true)
  }
  return completion.result()
}

const readAnswer = async (response: ModelHttpResponse, completion: Completion, signal: AbortSignal) => {
  if (response.contentType.includes("text/event-stream")) {
    return readStream(bodyChunks(response, signal), signal, completion)
  }
  const text = await readText(response, signal)
  // a stream sent with the wrong content type is still a stream
  if (/^\s*(data|event):/.test(text)) return readStream([text], signal, completion)
  const json = parseJsonObject(text, "Chat Completions")
  if (!Array.isArray(json["choices"]) && json["error"] === undefined) {
    throw badResponse("Chat Completions answer has no choices")
  }
  completion.apply(json, true)
  return completion.result()
}

export const chatCompletions: ModelProvider = {
  call: async (connection, request, { onTextDelta, signal }) => {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream, application/json"
    }
    // local servers need no key, and some reject a bearer token they did not expect
    if (connection.apiKey !== undefined && connection.apiKey !== "") {
      headers["authorization"] = `Bearer ${connection.apiKey}`
    }
    const response = await postJson(connection, "/chat/completions", headers, chatBody(request), signal)
    return readAnswer(response, new Completion(request.model, onTextDelta), signal)
  }
}
