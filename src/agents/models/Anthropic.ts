/**
 * Anthropic Messages (`POST {baseUrl}/v1/messages`), streamed. Tool results travel as `tool_result`
 * blocks of a user turn, and turns must alternate, so neighbouring same-role messages are merged.
 */
import {
  badResponse,
  bodyChunks,
  type ModelHttpResponse,
  parseJsonObject,
  postJson,
  readText,
  retryableStatus
} from "./ModelHttp.js"
import { type Message, ModelError, type ModelProvider, type ModelRequest, type ModelResponse } from "./ModelProvider.js"
import { serverSentEvents } from "./ServerSentEvents.js"
import { asArray, asCount, asRecord, asString, type JsonRecord, parseArguments, tryParseJson } from "./WireJson.js"

const ANTHROPIC_VERSION = "2023-06-01"
// the API requires max_tokens; 4096 is within every current model's output limit
const DEFAULT_MAX_TOKENS = 4096

// `input` must be an object; arguments the model got wrong (kept as the raw string) are replayed as {} —
// the tool result sent back already told the model what was wrong with them
const toolInput = (args: unknown): JsonRecord => asRecord(args) ?? asRecord(tryParseJson(String(args))) ?? {}

const anthropicMessages = (messages: ReadonlyArray<Message>) => {
  const out: Array<{ role: "user" | "assistant"; content: Array<JsonRecord> }> = []
  const push = (role: "user" | "assistant", blocks: Array<JsonRecord>) => {
    // an assistant turn with neither text nor calls has no valid representation (empty text is refused)
    if (blocks.length === 0) return
    const last = out.at(-1)
    if (last?.role === role) last.content.push(...blocks)
    else out.push({ role, content: blocks })
  }
  for (const message of messages) {
    switch (message.role) {
      case "user":
        push("user", [{ type: "text", text: message.text }])
        break
      case "assistant":
        push("assistant", [
          ...(message.text ? [{ type: "text", text: message.text }] : []),
          ...message.tool_calls.map((call) => ({
            type: "tool_use",
            id: call.id,
            name: call.name,
            input: toolInput(call.arguments)
          }))
        ])
        break
      case "tool":
        push("user", [{ type: "tool_result", tool_use_id: message.tool_call_id, content: message.content }])
    }
  }
  return out
}

export const messagesBody = (request: ModelRequest): JsonRecord => ({
  model: request.model,
  max_tokens: request.maxOutputTokens ?? DEFAULT_MAX_TOKENS,
  ...(request.instructions !== "" ? { system: request.instructions } : {}),
  messages: anthropicMessages(request.messages),
  ...(request.tools.length > 0
    ? {
      tools: request.tools.map((tool) => ({
        name: tool.name,
        description: tool.description,
        input_schema: tool.parameters
      }))
    }
    : {}),
  ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  stream: true
})

const FINISH: Record<string, ModelResponse["finish"]> = {
  end_turn: "stop",
  stop_sequence: "stop",
  tool_use: "tool_calls",
  max_tokens: "length",
  model_context_window_exceeded: "length",
  refusal: "content_filter"
}

// error types as the API documents them, so an error event mid-stream is judged like the HTTP status
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529
}

type Block = { kind: "text"; text: string } | {
  kind: "tool_use"
  id: string
  name: string
  json: string
  input: unknown
}

/** Collects the stream's events (or one non-streamed message) into a `ModelResponse`. */
class MessageAssembly {
  readonly blocks = new Map<number, Block>()
  usage: Record<"input" | "cacheRead" | "cacheCreation" | "output", number> = {
    input: 0,
    cacheRead: 0,
    cacheCreation: 0,
    output: 0
  }
  model: string | undefined = undefined
  stopReason: string | undefined = undefined
  stopped = false
  usageReported = false

  constructor(readonly requestedModel: string, readonly onTextDelta: ((delta: string) => void) | undefined) {}

  private readUsage(usage: JsonRecord | undefined) {
    if (usage !== undefined) this.usageReported = true
    // message_delta usage is cumulative and may repeat the input counts: fields present replace ours
    for (
      const [key, field] of [
        ["input", "input_tokens"],
        ["cacheRead", "cache_read_input_tokens"],
        ["cacheCreation", "cache_creation_input_tokens"],
        ["output", "output_tokens"]
      ] as const
    ) {
      if (usage?.[field] !== undefined) this.usage[key] = asCount(usage[field], `usage.${field}`)
    }
  }

  private text(block: Block | undefined, text: string | undefined) {
    if (block?.kind !== "text" || text === undefined || text === "") return
    block.text += text
    this.onTextDelta?.(text)
  }

  private startBlock(index: number, block: JsonRecord | undefined) {
    if (block?.["type"] === "text") {
      this.blocks.set(index, { kind: "text", text: "" })
      this.text(this.blocks.get(index), asString(block["text"]))
    } else if (block?.["type"] === "tool_use") {
      const id = asString(block["id"])
      const name = asString(block["name"])
      if (id === undefined || name === undefined) throw badResponse("tool_use block without id or name")
      this.blocks.set(index, { kind: "tool_use", id, name, json: "", input: block["input"] })
    }
    // thinking and server-tool blocks are not part of the conversation the agent keeps
  }

  event(json: JsonRecord) {
    const index = typeof json["index"] === "number" ? json["index"] : -1
    switch (json["type"]) {
      case "message_start":
        return this.message(asRecord(json["message"]), false)
      case "content_block_start":
        return this.startBlock(index, asRecord(json["content_block"]))
      case "content_block_delta": {
        const delta = asRecord(json["delta"])
        const block = this.blocks.get(index)
        if (delta?.["type"] === "text_delta") this.text(block, asString(delta["text"]))
        else if (delta?.["type"] === "input_json_delta" && block?.kind === "tool_use") {
          block.json += asString(delta["partial_json"]) ?? ""
        }
        return
      }
      case "message_delta":
        this.stopReason = asString(asRecord(json["delta"])?.["stop_reason"]) ?? this.stopReason
        return this.readUsage(asRecord(json["usage"]))
      case "message_stop":
        this.stopped = true
        return
      case "error": {
        const error = asRecord(json["error"])
        const status = ERROR_STATUS[asString(error?.["type"]) ?? ""]
        throw new ModelError({
          code: "model_stream_error",
          message: asString(error?.["message"]) ?? "error event in the Anthropic stream",
          status,
          retryable: status === undefined || retryableStatus(status)
        })
      }
    }
  }

  /** A message_start's message, or (`whole`) a complete non-streamed message. */
  message(message: JsonRecord | undefined, whole: boolean) {
    this.model = asString(message?.["model"]) ?? this.model
    this.readUsage(asRecord(message?.["usage"]))
    if (!whole) return
    asArray(message?.["content"]).forEach((block, index) => this.startBlock(index, asRecord(block)))
    this.stopReason = asString(message?.["stop_reason"])
    this.stopped = true
  }

  result(): ModelResponse {
    const ordered = [...this.blocks].sort(([a], [b]) => a - b).map(([, block]) => block)
    const text = ordered.flatMap((block) => block.kind === "text" ? [block.text] : []).join("")
    return {
      text: text === "" ? null : text,
      tool_calls: ordered.flatMap((block) =>
        block.kind === "tool_use"
          ? [{
            id: block.id,
            name: block.name,
            arguments: block.json === "" ? block.input ?? {} : parseArguments(block.json)
          }]
          : []
      ),
      usage: {
        // Anthropic's input_tokens excludes cache reads and writes; ours counts the whole prompt
        input_tokens: this.usage.input + this.usage.cacheRead + this.usage.cacheCreation,
        output_tokens: this.usage.output,
        cached_tokens: this.usage.cacheRead,
        ...(this.usageReported ? {} : { reported: false as const })
      },
      model: this.model ?? this.requestedModel,
      finish: this.stopReason === undefined ? "other" : FINISH[this.stopReason] ?? "other"
    }
  }
}

const readStream = async (
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  signal: AbortSignal,
  assembly: MessageAssembly
) => {
  for await (const event of serverSentEvents(chunks)) {
    // events already buffered must not reach onTextDelta once the caller has given up
    signal.throwIfAborted()
    const json = asRecord(tryParseJson(event.data))
    if (json === undefined) throw badResponse("Anthropic stream carried an event that is not a JSON object")
    assembly.event(json["type"] === undefined ? { ...json, type: event.event } : json)
  }
  if (!assembly.stopped && assembly.stopReason === undefined) {
    throw badResponse("Anthropic stream ended before message_stop", true)
  }
  return assembly.result()
}

const readAnswer = async (response: ModelHttpResponse, assembly: MessageAssembly, signal: AbortSignal) => {
  if (response.contentType.includes("text/event-stream")) {
    return readStream(bodyChunks(response, signal), signal, assembly)
  }
  // proxies that do not stream answer with the whole message
  const text = await readText(response, signal)
  if (/^\s*(data|event):/.test(text)) return readStream([text], signal, assembly)
  const json = parseJsonObject(text, "Anthropic")
  if (json["type"] === "error") assembly.event(json)
  if (!Array.isArray(json["content"])) throw badResponse("Anthropic answer has no content array")
  assembly.message(json, true)
  return assembly.result()
}

export const anthropic: ModelProvider = {
  call: async (connection, request, { onTextDelta, signal }) => {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream, application/json",
      "anthropic-version": ANTHROPIC_VERSION
    }
    if (connection.apiKey !== undefined) headers["x-api-key"] = connection.apiKey
    // tolerate a base URL configured with the version, as the other providers' base URLs are
    const path = /\/v1\/*$/.test(connection.baseUrl.replace(/[?#].*$/, "")) ? "/messages" : "/v1/messages"
    const response = await postJson(connection, path, headers, messagesBody(request), signal)
    return readAnswer(response, new MessageAssembly(request.model, onTextDelta), signal)
  }
}
