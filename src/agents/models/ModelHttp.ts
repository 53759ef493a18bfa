/**
 * The HTTP plumbing every provider shares: one POST through the caller's dispatcher, and the mapping of
 * everything that can go wrong on the way to a `ModelError` (or, on abort, to the signal's own reason, so
 * a cancelled call is never mistaken for a failed one and retried).
 */
import { request } from "undici"
import { findEgressRefusal } from "../../connectors/egress/GuardedDispatcher.js"
import { ModelError, type ProviderConnection } from "./ModelProvider.js"
import { asRecord, asString, tryParseJson } from "./WireJson.js"

export interface ResponseBody extends AsyncIterable<Buffer> {
  readonly destroy: (error?: Error) => unknown
}

export interface ModelHttpResponse {
  readonly contentType: string
  readonly body: ResponseBody
  /** For error messages: the origin only, since a base URL may carry a key in its query. */
  readonly origin: string
}

// error bodies are read for their message only; a misbehaving server must not make us buffer megabytes
const ERROR_BODY_LIMIT = 64 * 1024

/** Joins a configured base URL and an API path, refusing anything that is not an absolute http(s) URL. */
export const endpoint = (baseUrl: string, path: string): URL => {
  let base: URL
  try {
    base = new URL(baseUrl)
  } catch {
    throw notConfigured(`model base URL is not a valid URL`)
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw notConfigured(`model base URL must be http(s), got ${base.protocol}`)
  }
  return new URL(base.pathname.replace(/\/+$/, "") + path + base.search, base)
}

const notConfigured = (message: string) => new ModelError({ code: "model_not_configured", message, retryable: false })

export const retryableStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500

/**
 * The human-readable message in a provider error body: `error.message` (OpenAI, Anthropic, vLLM),
 * `error` as a string (Ollama, llama.cpp), `message`/`detail` (assorted proxies), else the text itself.
 */
export const providerErrorMessage = (text: string, status: number): string => {
  const json = asRecord(tryParseJson(text))
  const error = json?.["error"]
  const message = asString(asRecord(error)?.["message"]) ?? asString(error) ?? asString(json?.["message"]) ??
    asString(json?.["detail"])
  if (message !== undefined && message !== "") return message
  const trimmed = text.trim()
  return trimmed === "" ? `HTTP ${status}` : trimmed.slice(0, 500)
}

/** What a failure while talking to the server becomes: the abort reason, or a `ModelError`. */
export const transportFailure = (error: unknown, signal: AbortSignal, origin: string): unknown => {
  if (signal.aborted) return signal.reason
  if (error instanceof ModelError) return error
  const refusal = findEgressRefusal(error)
  if (refusal !== undefined) {
    // retrying cannot change a policy decision; the operator has to allowlist the model server
    return new ModelError({ code: "model_egress_refused", message: refusal.message, retryable: false, cause: error })
  }
  const detail = error instanceof Error ? error.message : String(error)
  return new ModelError({
    code: "model_unreachable",
    message: `model server ${origin} unreachable: ${detail}`,
    retryable: true,
    cause: error
  })
}

/**
 * How long a 429/503 asks to wait: OpenAI's `retry-after-ms`, else `Retry-After` in seconds or as an HTTP date.
 * Undefined when absent or unreadable.
 */
export const retryAfterMs = (headers: Record<string, string | Array<string> | undefined>, now = Date.now()) => {
  const first = (name: string) => {
    const value = headers[name]
    return (Array.isArray(value) ? value[0] : value)?.trim()
  }
  const ms = first("retry-after-ms")
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms))
  const after = first("retry-after")
  if (after === undefined || after === "") return undefined
  if (/^\d+(\.\d+)?$/.test(after)) return Math.ceil(Number(after) * 1000)
  const date = Date.parse(after)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

const readLimited = async (body: ResponseBody, limit: number): Promise<string> => {
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
    if (size >= limit) break // leaving the loop destroys the stream; the rest is not needed
  }
  return Buffer.concat(chunks).toString("utf8")
}

/**
 * POSTs a JSON payload and returns the open response body of a 2xx answer. Headers: the connection's
 * extra headers first (lower-cased, so a configured "Authorization" cannot travel twice), then the
 * provider's own.
 */
export const postJson = async (
  connection: ProviderConnection,
  path: string,
  providerHeaders: Readonly<Record<string, string>>,
  payload: unknown,
  signal: AbortSignal
): Promise<ModelHttpResponse> => {
  signal.throwIfAborted()
  const url = endpoint(connection.baseUrl, path)
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(connection.headers ?? {})) headers[name.toLowerCase()] = value
  Object.assign(headers, providerHeaders)
  let response: Awaited<ReturnType<typeof request>>
  try {
    response = await request(url, {
      method: "POST",
      dispatcher: connection.dispatcher,
      signal,
      headers,
      body: JSON.stringify(payload),
      // undici's 300 s defaults cut off a reasoning model's unstreamed answer, whose headers come only when it is
      // complete (often past 5 minutes), then retried it: the caller's signal (the task's time limit, a cancel)
      // bounds the call instead
      headersTimeout: 0,
      bodyTimeout: 0
    })
  } catch (error) {
    throw transportFailure(error, signal, url.origin)
  }
  const contentType = String(response.headers["content-type"] ?? "").toLowerCase()
  if (response.statusCode >= 200 && response.statusCode < 300) {
    return { contentType, body: response.body, origin: url.origin }
  }
  let text: string
  try {
    text = await readLimited(response.body, ERROR_BODY_LIMIT)
  } catch (error) {
    if (signal.aborted) throw signal.reason
    text = error instanceof Error ? error.message : ""
  }
  const wait = retryAfterMs(response.headers)
  throw new ModelError({
    code: "model_http_error",
    message: providerErrorMessage(text, response.statusCode) +
      (wait === undefined ? "" : ` (the server asks to retry after ${Math.ceil(wait / 1000)} s)`),
    status: response.statusCode,
    retryable: retryableStatus(response.statusCode),
    retryAfterMs: wait
  })
}

/**
 * The body's chunks, with a failure while reading them (connection reset, body timeout, abort) mapped
 * like a failure to connect. Errors thrown by the consumer's own loop are not touched.
 */
export async function* bodyChunks(response: ModelHttpResponse, signal: AbortSignal): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of response.body) yield chunk
  } catch (error) {
    throw transportFailure(error, signal, response.origin)
  }
}

/** Reads a whole (success) body as text. */
export const readText = async (response: ModelHttpResponse, signal: AbortSignal): Promise<string> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of bodyChunks(response, signal)) chunks.push(chunk)
  return Buffer.concat(chunks).toString("utf8")
}

export const badResponse = (message: string, retryable = false) =>
  new ModelError({ code: "model_bad_response", message, retryable })

/** Parses a JSON object body, or fails with `model_bad_response`. */
export const parseJsonObject = (text: string, what: string) => {
  const json = asRecord(tryParseJson(text))
  if (json === undefined) throw badResponse(`${what} answered with a body that is not a JSON object`)
  return json
}
