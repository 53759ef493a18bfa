/**
 * Real model servers for tests: node:http on 127.0.0.1 speaking the OpenAI Responses, Chat Completions
 * or Anthropic Messages protocol (SSE included when the request asks for `stream: true`), answering each
 * request with the next scripted turn and recording what was sent.
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export type ModelServerKind = "openai" | "openai-chat" | "anthropic"

export interface TurnSpec {
  text?: string
  /** `raw_arguments`: the arguments' text verbatim (invalid JSON, as a model cut off mid-call sends it). */
  tool_calls?: Array<{ name: string; arguments?: unknown; raw_arguments?: string }>
  usage?: { input: number; output: number; cached?: number }
  /** Report no usage at all, as some OpenAI-compatible servers do. */
  omit_usage?: boolean
  /** Answer with this error status and `error` as the provider's error message. */
  status?: number
  error?: string
  /** Headers of the error answer (`retry-after`). */
  headers?: Record<string, string>
  delay_ms?: number
  /** Answer once this settles: at the test's own moment, where a fixed `delay_ms` would guess one. */
  until?: Promise<unknown>
  /** Never answer (to test aborts). */
  hang?: boolean
  /** Why the model stopped, when not at the end of its turn. */
  finish?: "length" | "content_filter"
  /** Answer 200 application/json with this body verbatim (malformed-answer tests). */
  raw?: string
  /** Answer one JSON document although the request asked for a stream (servers that ignore `stream`). */
  ignore_stream?: boolean
  /** After the first streamed text delta: stop sending, drop the connection, or send an error event. */
  mid_stream?: "hang" | "reset" | "error"
  /** Pause this long between the frames of a streamed answer (text reaching a listener before the end). */
  frame_delay_ms?: number
}

export interface ModelServerRequest {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  /** The parsed JSON body (the raw text if it was not JSON). */
  readonly body: any
  /** When it arrived (Date.now()). */
  readonly at: number
}

export interface ModelServer {
  /** The base URL a client is configured with: …/v1 for OpenAI protocols, the bare origin for Anthropic. */
  readonly url: string
  readonly requests: Array<ModelServerRequest>
  readonly script: Array<TurnSpec>
  readonly close: () => Promise<void>
}

const PATHS: Record<ModelServerKind, string> = {
  openai: "/v1/responses",
  "openai-chat": "/v1/chat/completions",
  anthropic: "/v1/messages"
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  429: "rate_limit_error",
  529: "overloaded_error"
}

const errorBody = (kind: ModelServerKind, status: number, message: string) =>
  kind === "anthropic"
    ? { type: "error", error: { type: ANTHROPIC_ERROR_TYPES[status] ?? "api_error", message } }
    : { error: { message, type: status === 401 ? "invalid_request_error" : "server_error", param: null, code: null } }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// text in word-sized pieces and arguments in 5-character fragments, as real servers split them
const words = (text: string) => text.match(/\S+\s*|\s+/g) ?? []
const fragments = (text: string) => text.match(/[\s\S]{1,5}/g) ?? [""]

interface Answer {
  readonly turn: TurnSpec
  readonly model: string
  readonly calls: Array<{ id: string; name: string; arguments: string; input: unknown }>
  readonly usage: { input: number; output: number; cached: number }
}

const responsesJson = ({ calls, model, turn, usage }: Answer) => ({
  id: "resp_1",
  object: "response",
  created_at: 1_700_000_000,
  status: turn.finish === undefined ? "completed" : "incomplete",
  incomplete_details: turn.finish === "length"
    ? { reason: "max_output_tokens" }
    : turn.finish === "content_filter"
    ? { reason: "content_filter" }
    : null,
  model,
  output: [
    { type: "reasoning", id: "rs_1", summary: [] },
    ...(turn.text !== undefined
      ? [{
        type: "message",
        id: "msg_1",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: turn.text, annotations: [] }]
      }]
      : []),
    ...calls.map((call, i) => ({
      type: "function_call",
      id: `fc_${i}`,
      call_id: call.id,
      name: call.name,
      arguments: call.arguments,
      status: "completed"
    }))
  ],
  usage: turn.omit_usage === true ? null : {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cached },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.output
  }
})

const chatFinish = ({ calls, turn }: Answer) => turn.finish ?? (calls.length > 0 ? "tool_calls" : "stop")
const chatUsage = ({ usage }: Answer) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  prompt_tokens_details: { cached_tokens: usage.cached }
})
const chatToolCalls = ({ calls }: Answer) =>
  calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }))

const chatJson = (answer: Answer) => ({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1_700_000_000,
  model: answer.model,
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: answer.turn.text ?? null,
      ...(answer.calls.length > 0 ? { tool_calls: chatToolCalls(answer) } : {})
    },
    finish_reason: chatFinish(answer)
  }],
  ...(answer.turn.omit_usage === true ? {} : { usage: chatUsage(answer) })
})

/** SSE frames; `cut` is the index of the first text delta, where `mid_stream` strikes. */
const chatFrames = (answer: Answer, includeUsage: boolean) => {
  const chunk = (choices: Array<unknown>, usage: unknown = null) =>
    `data: ${
      JSON.stringify({
        id: "chatcmpl-1",
        object: "chat.completion.chunk",
        created: 1_700_000_000,
        model: answer.model,
        choices,
        ...(includeUsage ? { usage } : {})
      })
    }\n\n`
  const delta = (d: unknown, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }])
  const frames = [
    delta({ role: "assistant", content: "" }),
    ...words(answer.turn.text ?? "").map((content) => delta({ content })),
    // a call opens with its id and name; its arguments follow in fragments
    ...answer.calls.flatMap((call, index) => [
      delta({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }),
      ...fragments(call.arguments).map((part) => delta({ tool_calls: [{ index, function: { arguments: part } }] }))
    ])
  ]
  frames.push(delta({}, chatFinish(answer)))
  if (includeUsage && answer.turn.omit_usage !== true) frames.push(chunk([], chatUsage(answer)))
  frames.push("data: [DONE]\n\n")
  const error = `data: ${JSON.stringify({ error: { message: "worker crashed", type: "internal_error" } })}\n\n`
  return { frames, cut: 1, error }
}

/** Responses API stream events (`stream: true`): the final `response.completed` carries the whole response. */
const responsesFrames = (answer: Answer) => {
  let sequence = 0
  const event = (type: string, data: object) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`
  const whole = responsesJson(answer)
  const pending = { ...whole, status: "in_progress", output: [], usage: null, incomplete_details: null }
  const frames = [
    event("response.created", { response: pending }),
    event("response.in_progress", { response: pending })
  ]
  whole.output.forEach((item: any, output_index) => {
    if (item.type === "message") {
      frames.push(event("response.output_item.added", { output_index, item: { ...item, content: [] } }))
      for (const delta of words(answer.turn.text ?? "")) {
        frames.push(event("response.output_text.delta", { item_id: item.id, output_index, content_index: 0, delta }))
      }
      frames.push(
        event("response.output_text.done", { item_id: item.id, output_index, content_index: 0, text: answer.turn.text })
      )
    } else if (item.type === "function_call") {
      frames.push(event("response.output_item.added", { output_index, item: { ...item, arguments: "" } }))
      for (const delta of fragments(item.arguments)) {
        frames.push(event("response.function_call_arguments.delta", { item_id: item.id, output_index, delta }))
      }
    }
    frames.push(event("response.output_item.done", { output_index, item }))
  })
  frames.push(event(whole.status === "completed" ? "response.completed" : "response.incomplete", { response: whole }))
  const cut = frames.findIndex((f) => f.startsWith("event: response.output_text.delta"))
  return {
    frames,
    cut: cut === -1 ? 2 : cut,
    error: event("error", { code: "server_error", message: "The server had an error", param: null })
  }
}

const anthropicStop = ({ calls, turn }: Answer) =>
  turn.finish === "length"
    ? "max_tokens"
    : turn.finish === "content_filter"
    ? "refusal"
    : calls.length > 0
    ? "tool_use"
    : "end_turn"
const anthropicUsage = ({ usage }: Answer) => ({
  input_tokens: usage.input - usage.cached,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: usage.cached
})

const anthropicJson = (answer: Answer) => ({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: answer.model,
  content: [
    ...(answer.turn.text !== undefined ? [{ type: "text", text: answer.turn.text }] : []),
    ...answer.calls.map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: call.input }))
  ],
  stop_reason: anthropicStop(answer),
  stop_sequence: null,
  ...(answer.turn.omit_usage === true
    ? {}
    : { usage: { ...anthropicUsage(answer), output_tokens: answer.usage.output } })
})

const anthropicFrames = (answer: Answer) => {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const frames = [
    event("message_start", {
      message: {
        ...anthropicJson(answer),
        content: [],
        stop_reason: null,
        ...(answer.turn.omit_usage === true ? {} : { usage: { ...anthropicUsage(answer), output_tokens: 1 } })
      }
    }),
    event("ping", {})
  ]
  const blocks: Array<readonly [object, ReadonlyArray<object>]> = [
    ...(answer.turn.text !== undefined
      ? [[{ type: "text", text: "" }, words(answer.turn.text).map((text) => ({ type: "text_delta", text }))]] as const
      : []),
    ...answer.calls.map((call) =>
      [
        { type: "tool_use", id: call.id, name: call.name, input: {} },
        // the API opens every tool input with an empty fragment
        ["", ...fragments(call.arguments)].map((partial_json) => ({ type: "input_json_delta", partial_json }))
      ] as const
    )
  ]
  frames.push(...blocks.flatMap(([start, deltas], index) => [
    event("content_block_start", { index, content_block: start }),
    ...deltas.map((delta) => event("content_block_delta", { index, delta })),
    event("content_block_stop", { index })
  ]))
  frames.push(
    event("message_delta", {
      delta: { stop_reason: anthropicStop(answer), stop_sequence: null },
      ...(answer.turn.omit_usage === true ? {} : { usage: { output_tokens: answer.usage.output } })
    })
  )
  frames.push(event("message_stop", {}))
  return { frames, cut: 3, error: event("error", { error: { type: "overloaded_error", message: "Overloaded" } }) }
}

const stream = async (
  res: Http.ServerResponse,
  frames: { frames: Array<string>; cut: number; error: string },
  turn: TurnSpec
) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const sent = turn.mid_stream === undefined ? frames.frames : frames.frames.slice(0, frames.cut + 1)
  for (const frame of sent) {
    res.write(frame)
    if (turn.frame_delay_ms !== undefined) await sleep(turn.frame_delay_ms)
  }
  if (turn.mid_stream === "hang") return
  if (turn.mid_stream === "reset") return void res.write("", () => res.socket?.destroy())
  if (turn.mid_stream === "error") res.write(frames.error)
  res.end()
}

export const startModelServer = async (kind: ModelServerKind): Promise<ModelServer> => {
  const requests: Array<ModelServerRequest> = []
  const script: Array<TurnSpec> = []
  const sendJson = (res: Http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { ...headers, "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }

  const answer = async (path: string, body: any, res: Http.ServerResponse) => {
    if (path !== PATHS[kind]) return sendJson(res, 404, errorBody(kind, 404, `no route for ${path}`))
    const turn = script.shift()
    if (turn === undefined) {
      return sendJson(res, 500, errorBody(kind, 500, "the test scripted no turn for this request"))
    }
    if (turn.hang === true) return
    if (turn.delay_ms !== undefined) await sleep(turn.delay_ms)
    if (turn.until !== undefined) await turn.until.catch(() => undefined)
    // as OpenAI answers a reasoning model (o1, o3, o4-mini, gpt-5) asked with the older parameters
    if (kind === "openai-chat" && /^(o\d|gpt-5)/.test(String(body?.model))) {
      const refused = body?.max_tokens !== undefined
        ? "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        : body?.temperature !== undefined && body.temperature !== 1
        ? "Unsupported value: 'temperature' does not support " + body.temperature +
          " with this model. Only the default (1) value is supported."
        : undefined
      if (refused !== undefined) {
        return sendJson(res, 400, {
          error: { message: refused, type: "invalid_request_error", param: null, code: "unsupported_parameter" }
        })
      }
    }
    if (turn.status !== undefined || turn.error !== undefined) {
      const status = turn.status ?? 500
      return sendJson(res, status, errorBody(kind, status, turn.error ?? `HTTP ${status}`), turn.headers)
    }
    if (turn.raw !== undefined) {
      res.writeHead(200, { "content-type": "application/json" })
      return void res.end(turn.raw)
    }
    const calls = (turn.tool_calls ?? []).map((call, i) => ({
      id: `${kind === "anthropic" ? "toolu" : "call"}_r${requests.length}_${i}`,
      name: call.name,
      arguments: call.raw_arguments ?? JSON.stringify(call.arguments ?? {}),
      input: call.arguments ?? {}
    }))
    const outputChars = (turn.text ?? "").length + calls.reduce((n, call) => n + call.arguments.length, 0)
    const usage = turn.usage ??
      { input: Math.ceil(JSON.stringify(body).length / 4), output: Math.ceil(outputChars / 4) }
    const reply: Answer = {
      turn,
      calls,
      // real servers report a dated snapshot of the model asked for
      model: `${String(body?.model)}-2025-01-01`,
      usage: { input: usage.input, output: usage.output, cached: usage.cached ?? 0 }
    }
    const streamed = body?.stream === true && turn.ignore_stream !== true
    if (kind === "openai") {
      if (!streamed) return sendJson(res, 200, responsesJson(reply))
      return stream(res, responsesFrames(reply), turn)
    }
    if (kind === "openai-chat") {
      if (!streamed) return sendJson(res, 200, chatJson(reply))
      return stream(res, chatFrames(reply, body?.stream_options?.include_usage === true), turn)
    }
    if (!streamed) return sendJson(res, 200, anthropicJson(reply))
    stream(res, anthropicFrames(reply), turn)
  }

  const server = Http.createServer((req, res) => {
    res.on("error", () => {}) // the client may have gone (aborts are what several tests are about)
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      let body: any = text
      try {
        body = JSON.parse(text)
      } catch {
        // recorded as text; the route answers as a real server would
      }
      const path = new URL(req.url ?? "/", "http://model").pathname
      requests.push({ path, headers: req.headers, body, at: Date.now() })
      answer(path, body, res).catch((error) => sendJson(res, 500, errorBody(kind, 500, String(error))))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`
  return {
    url: kind === "anthropic" ? origin : `${origin}/v1`,
    requests,
    script,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
