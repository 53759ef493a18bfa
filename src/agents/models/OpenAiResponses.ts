/**
 * OpenAI Responses API (`POST {baseUrl}/responses`), non-streaming. `store: false` because the agent
 * keeps the conversation itself and replays it every turn: nothing should persist at OpenAI.
 */
import { badResponse, parseJsonObject, postJson, readText } from "./ModelHttp.js"
import {
  type Message,
  ModelError,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolCall
} from "./ModelProvider.js"
import {
  asArray,
  asCount,
  asRecord,
  asString,
  type JsonRecord,
  parseArguments,
  serializeArguments
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
      input_tokens: asCount(usage?.["input_tokens"]),
      output_tokens: asCount(usage?.["output_tokens"]),
      cached_tokens: asCount(asRecord(usage?.["input_tokens_details"])?.["cached_tokens"])
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

export const openAiResponses: ModelProvider = {
  call: async (connection, request, { onTextDelta, signal }) => {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" }
    if (connection.apiKey !== undefined) headers["authorization"] = `Bearer ${connection.apiKey}`
    const response = await postJson(connection, "/responses", headers, responsesBody(request), signal)
    const text = await readText(response, signal)
    const parsed = parseResponse(parseJsonObject(text, "Responses API"), request.model)
    if (parsed.text !== null && parsed.text !== "") onTextDelta?.(parsed.text)
    return parsed
  }
}
