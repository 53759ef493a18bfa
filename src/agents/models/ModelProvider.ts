/**
 * One interface over the model providers an agent can call. An agent loop is: model call → tool calls →
 * model call … → final text; every provider translates this neutral conversation into its own wire
 * protocol and its answer back, so the loop never sees provider shapes.
 */
import type { Dispatcher } from "undici"

export type JsonSchema = { readonly [k: string]: unknown }

/** A tool the model may call. `name` matches /^[a-zA-Z0-9_-]{1,64}$/ (the strictest provider's rule). */
export interface ToolSpec {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
}

/** A tool call; `arguments` parsed from JSON, or the raw string when the model sent invalid JSON. */
export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: unknown
}

export type Message =
  | { readonly role: "user"; readonly text: string }
  | { readonly role: "assistant"; readonly text: string | null; readonly tool_calls: ReadonlyArray<ToolCall> }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly name: string; readonly content: string }

export interface ModelRequest {
  readonly model: string
  /** System prompt; "" = none. */
  readonly instructions: string
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly maxOutputTokens?: number
  readonly temperature?: number
}

/**
 * `input_tokens` counts the whole prompt, cached part included; `cached_tokens` is that cached part. `reported:
 * false` from a provider: the server sent no usage at all (the counts are 0); `estimated: true` from the gateway:
 * the counts are its estimate in place of those.
 */
export interface Usage {
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cached_tokens: number
  readonly reported?: false
  readonly estimated?: true
}

export interface ModelResponse {
  readonly text: string | null
  readonly tool_calls: ReadonlyArray<ToolCall>
  readonly usage: Usage
  /** As reported by the server (a dated snapshot, often); the requested name when it reports none. */
  readonly model: string
  readonly finish: "stop" | "tool_calls" | "length" | "content_filter" | "other"
}

export type ModelErrorCode =
  | "model_http_error"
  | "model_unreachable"
  | "model_egress_refused"
  | "model_bad_response"
  | "model_bad_usage"
  | "model_stream_error"
  | "model_not_configured"
  | "script_exhausted"

/** A failed model call. `retryable` tells the agent loop whether trying the same call again can help. */
export class ModelError extends Error {
  override readonly name = "ModelError"
  readonly status: number | undefined
  readonly retryable: boolean
  readonly code: ModelErrorCode
  /** How long the server asked to wait before trying again (`Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined

  constructor(options: {
    readonly code: ModelErrorCode
    readonly message: string
    readonly retryable: boolean
    readonly status?: number | undefined
    readonly retryAfterMs?: number | undefined
    readonly cause?: unknown
  }) {
    super(options.message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = options.code
    this.retryable = options.retryable
    this.status = options.status
    this.retryAfterMs = options.retryAfterMs
  }
}

export interface ProviderConnection {
  /** e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1, https://api.anthropic.com */
  readonly baseUrl: string
  readonly apiKey: string | undefined
  readonly dispatcher: Dispatcher
  readonly headers?: Readonly<Record<string, string>>
}

export interface CallOptions {
  readonly signal: AbortSignal
  /** Text as it is generated (streaming providers); non-streaming answers deliver their text in one piece. */
  readonly onTextDelta?: (delta: string) => void
}

export interface ModelProvider {
  readonly call: (connection: ProviderConnection, request: ModelRequest, options: CallOptions) => Promise<ModelResponse>
}

/** A model call as the gateway returns it: the response, its cost by the price table, and how long it took. */
export interface ModelCallResult {
  readonly response: ModelResponse
  readonly cost: number
  readonly durationMs: number
}
