/**
 * OpenAI Responses API (`POST {baseUrl}/responses`). `store: false` because the agent keeps the
 * conversation itself and replays it every turn: nothing should persist at OpenAI. Non-streaming unless the
 * caller listens for text (`onTextDelta`: a streamed invoke follows the task): then `stream: true`, whose
 * final `response.completed` event carries the same response object a non-streamed call returns.
 */
import { badResponse, bodyChunks, type ModelHttpResponse, parseJsonObject, postJson, readText } from "./ModelHttp.js"
import {
  type Message,
  ModelError,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCall
} from "./ModelProvider.js"
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

const inputItems = (messages: ReadonlyArray<Message>): Array<JsonRecord> =>
  messages.flatMap((message): Array<JsonRecord> => {
    switch (message.role) {
      case "user":
        return [{ role: "user", content: [{ type: "input_text", text: message.text }] }]
      case "assistant":
        return [
          // assistant turns take output_text parts: the API refuses input_text for role "assistant"
          ...(message.text ? [{ role: "assistant", content: [{ type: "output_text", text: message.text }] }] : []),
          ...message.tool_calls.map((call) => ({
            type: "function_call",
            call_id: call.id,
            name: call.name,
            arguments: serializeArguments(call.arguments)
          }))
        ]
      case "tool":
        return [{ type: "function_call_output", call_id: message.tool_call_id, output: message.content }]
    }
  })

export const responsesBody = (request: ModelRequest): JsonRecord => ({
  model: request.model,
  ...(request.instructions !== "" ? { instructions: request.instructions } : {}),
  input: inputItems(request.messages),
  // an empty tools array is rejected by some servers speaking this API, so "no tools" means no field
  ...(request.tools.length > 0
    ? {
      tools: request.tools.map((tool) => ({
        type: "function",
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        strict: false
      }))
    }
    : {}),
  ...(request.maxOutputTokens !== undefined ? { max_output_tokens: request.maxOutputTokens } : {}),
  ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  store: false
})

/** Reads a Responses API `response` object. */
export const parseResponse = (json: JsonRecord, requestedModel: string): ModelResponse => {
  const status = asString(json["status"])
  if (status === "failed") {
    const error = asRecord(json["error"])
    const code = asString(error?.["code"])
    throw new ModelError({
      code: "model_stream_error",
      message: asString(error?.["message"]) ?? "the model response failed",
      retryable: code === "server_error" || code === "rate_limit_exceeded"
    })
  }
  const output = json["output"]
  if (!Array.isArray(output)) throw badResponse("Responses API answer has no output array")
  let text: string | null = null
  let refused = false
  const toolCalls: Array<ToolCall> = []
  for (const item of output.map(asRecord)) {
    if (item?.["type"] === "message") {
      for (const part of asArray(item["content"]).map(asRecord)) {
        // a refusal is the model's answer to the user, so it is kept as text and flagged in `finish`
        const piece = part?.["type"] === "output_text"
          ? asString(part["text"])
          : part?.["type"] === "refusal"
          ? asString(part["refusal"])
          : undefined
        if (part?.["type"] === "refusal") refused = true
        if (piece !== undefined) text = (text ?? "") + piece
      }
    } else if (item?.["type"] === "function_call") {
      const id = asString(item["call_id"])
      const name = asString(item["name"])
      if (id === undefined || name === undefined) throw badResponse("function_call item without call_id or name")
      toolCalls.push({ id, name, arguments: parseArguments(asString(item["arguments"]) ?? "") })
    }
    // reasoning items are not replayable without store or encrypted content, so they are skipped
  }
  const usage = asRecord(json["usage"])
  const incomplete = asString(asRecord(json["incomplete_details"])?.["reason"])
  return {
    text,
    tool_calls: toolCalls,
    usage: {
      input_tokens: asCount(usage?.["input_tokens"], "usage.input_tokens"),
      output_tokens: asCount(usage?.["output_tokens"], "usage.output_tokens"),
      cached_tokens: asCount(
        asRecord(usage?.["input_tokens_details"])?.["cached_tokens"],
        "usage.input_tokens_details.cached_tokens"
      ),
      ...(usage === undefined ? { reported: false as const } : {})
    },
    model: asString(json["model"]) ?? requestedModel,
    finish: toolCalls.length > 0
      ? "tool_calls"
      : status === "incomplete"
      ? (incomplete === "max_output_tokens" ? "length" : incomplete === "content_filter" ? "content_filter" : "other")
      : refused
      ? "content_filter"
      : "stop"
  }
}

/** The events that end a streamed response; each carries the whole `response` object. */
const FINAL = new Set(["response.completed", "response.incomplete", "response.failed"])
/** Text as it is generated: the answer's, or a refusal's (kept as text, as `parseResponse` does). */
const TEXT_DELTAS = new Set(["response.output_text.delta", "response.refusal.delta"])

/**
 * A streamed response: text deltas as they come, the result from the final event's `response`. Output items
 * are also collected as they finish, for servers whose final event carries the response without its output.
 */
const readStream = async (
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  signal: AbortSignal,
  request: ModelRequest,
  onTextDelta: (delta: string) => void
): Promise<ModelResponse> => {
  const items: Array<unknown> = []
  let final: JsonRecord | undefined
  for await (const event of serverSentEvents(chunks)) {
    // events already buffered must not reach onTextDelta once the caller has given up
    signal.throwIfAborted()
    if (final !== undefined) continue // read on to the end, so the connection can be reused
    const json = asRecord(tryParseJson(event.data))
    if (json === undefined) throw badResponse("Responses API stream carried an event that is not a JSON object")
    const type = asString(json["type"]) ?? event.event
    if (TEXT_DELTAS.has(type)) {
      const delta = asString(json["delta"])
      if (delta !== undefined && delta !== "") onTextDelta(delta)
    } else if (type === "response.output_item.done") {
      items.push(json["item"])
    } else if (FINAL.has(type)) {
      final = asRecord(json["response"])
      if (final === undefined) throw badResponse(`Responses API ${type} event without a response`)
    } else if (type === "error") {
      const code = asString(json["code"])
      throw new ModelError({
        code: "model_stream_error",
        message: asString(json["message"]) ?? "error event in the Responses API stream",
        retryable: code === undefined || code === "server_error" || code === "rate_limit_exceeded"
      })
    }
  }
  if (final === undefined) {
    // the server closed cleanly but mid-answer (a crashed worker behind a proxy); the next attempt may work
    throw badResponse("Responses API stream ended before the response was completed", true)
  }
  const output = asArray(final["output"])
  return parseResponse(output.length === 0 && items.length > 0 ? { ...final, output: items } : final, request.model)
}

const readAnswer = async (
  response: ModelHttpResponse,
  signal: AbortSignal,
  request: ModelRequest,
  onTextDelta: ((delta: string) => void) | undefined
) => {
  if (onTextDelta !== undefined && response.contentType.includes("text/event-stream")) {
    return readStream(bodyChunks(response, signal), signal, request, onTextDelta)
  }
  const text = await readText(response, signal)
  // a stream sent with the wrong content type is still a stream
  if (onTextDelta !== undefined && /^\s*(data|event):/.test(text)) {
    return readStream([text], signal, request, onTextDelta)
  }
  const parsed = parseResponse(parseJsonObject(text, "Responses API"), request.model)
  // a server that ignored `stream` answers in one piece
  if (parsed.text !== null && parsed.text !== "") onTextDelta?.(parsed.text)
  return parsed
}

export const openAiResponses: ModelProvider = {
  call: async (connection, request, { onTextDelta, signal }) => {
    const streamed = onTextDelta !== undefined
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: streamed ? "text/event-stream, application/json" : "application/json"
    }
    if (connection.apiKey !== undefined) headers["authorization"] = `Bearer ${connection.apiKey}`
    const body = streamed ? { ...responsesBody(request), stream: true } : responsesBody(request)
    const response = await postJson(connection, "/responses", headers, body, signal)
    return readAnswer(response, signal, request, onTextDelta)
  }
}
