import type * as Http from "node:http"
import type { ErrorFields } from "./ErrorEnvelope.js"

/**
 * The rules every transport (the HttpApi pipeline, the plain-Node fast paths, MCP) applies to what a
 * client sends, with their messages, written once.
 */

/** Deepest nesting accepted: deep input must not reach recursive decoders. */
export const MAX_JSON_DEPTH = 64

const STRUCTURED_JSON = /^application\/[a-z0-9!#$&^_.-]+\+json$/

/** JSON is `application/json` or `application/*+json` (RFC 6839), parameters such as `charset` allowed. */
export const isJsonMediaType = (header: string | undefined): boolean => {
  if (header === undefined) return false
  const semicolon = header.indexOf(";")
  const type = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase()
  return type === "application/json" || STRUCTURED_JSON.test(type)
}

/** A request carries a body when it declares a non-zero length, or a chunked one. */
export const declaresBody = (headers: Readonly<Record<string, string | Array<string> | undefined>>): boolean => {
  const length = headers["content-length"]
  return length !== undefined ? length !== "0" : headers["transfer-encoding"] !== undefined
}

export const unsupportedMediaType = (got: string | undefined): ErrorFields => ({
  code: "unsupported_media_type",
  message: got === undefined || got === ""
    ? "Send the body as JSON with Content-Type: application/json (the request has none)."
    : `Send the body as JSON with Content-Type: application/json or application/*+json (got ${got}).`
})

export const invalidJson: ErrorFields = { code: "invalid_json", message: "The request body is not valid JSON." }

/** A body past SWITCHYARD_MAX_BODY_BYTES: by its declared length, or (a chunked one) as it grew past it. */
export const payloadTooLarge = (length?: number, max?: number): ErrorFields => ({
  code: "payload_too_large",
  message: length === undefined || max === undefined
    ? "The request body is larger than this server accepts (SWITCHYARD_MAX_BODY_BYTES)."
    : `The request body is ${length} bytes; this server accepts at most ${max} (SWITCHYARD_MAX_BODY_BYTES).`
})

const tooDeep: ErrorFields = {
  code: "invalid_json",
  message: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`
}

const nulCharacter = (where: string): ErrorFields => ({
  code: "invalid_text",
  message: `The ${where} contains the NUL character (U+0000), which text here cannot hold; remove it.`
})

/**
 * What a JSON text may not hold, found in one pass over it with strings skipped: nesting deeper than
 * MAX_JSON_DEPTH, and the escape `\u0000` (PostgreSQL text and jsonb cannot store NUL, so it is refused
 * at the edge rather than failing in the database). Says nothing about syntax: the parser does that.
 */
export const inspectJsonText = (text: string): ErrorFields | undefined => {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) {
        // an escape: `\u0000` is NUL, anything else is skipped whole
        if (text.charCodeAt(i + 1) === 117 && text.startsWith("0000", i + 2)) return nulCharacter("request body")
        i++
      } else if (c === 34) inString = false
      else if (c === 0) return nulCharacter("request body")
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) max = Math.max(max, ++depth)
    else if (c === 93 || c === 125) depth--
  }
  return max > MAX_JSON_DEPTH ? tooDeep : undefined
}

export type ParsedJson =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: ErrorFields }

/** Inspects, then parses a JSON body; an empty body is `whenEmpty` where the route allows one. */
export const parseJsonBody = (text: string, whenEmpty?: unknown): ParsedJson => {
  if (text === "" && whenEmpty !== undefined) return { ok: true, value: whenEmpty }
  const refused = inspectJsonText(text)
  if (refused !== undefined) return { ok: false, error: refused }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false, error: invalidJson }
  }
}

/** A percent-encoded NUL in the path or query: refused before it reaches a decoder or the database. */
export const urlProblem = (url: string): ErrorFields | undefined =>
  url.includes("%00") ? nulCharacter("URL") : undefined

/** The NUL rule for an `application/x-www-form-urlencoded` body (the OAuth endpoints'), encoded or not. */
export const inspectFormText = (text: string): ErrorFields | undefined =>
  text.includes("%00") || text.includes("\u0000") ? nulCharacter("request body") : undefined

/**
 * The one request on /v1 whose body is not JSON: a workspace file upload (`POST /v1/files`), raw or
 * multipart. Its handler streams the body to storage under SWITCHYARD_MAX_FILE_BYTES (src/files), so none
 * of the JSON body rules, nor SWITCHYARD_MAX_BODY_BYTES, apply to it; the rest of a refused one is dropped
 * (`dropRestOfUpload`).
 */
export const isFileUpload = (method: string, url: string): boolean => {
  if (method !== "POST") return false
  const query = url.indexOf("?")
  const path = query === -1 ? url : url.slice(0, query)
  return path === "/v1/files" || path === "/v1/files/"
}

/** Whether a request's body must be JSON: the API's (/v1) bodies are, but for the file upload. */
export const bodyMustBeJson = (method: string, url: string): boolean =>
  url.startsWith("/v1/") && !isFileUpload(method, url)

const UPLOAD_LINGER_MS = 2000
const UPLOAD_LINGER_BYTES = 8 * 1024 * 1024

/**
 * After a refused upload (a 413 past the limit, a 401, a 400) its client may still be sending. What it sends
 * is read and dropped for a moment (2 s, 8 MiB), so the client reads the answer rather than a connection
 * reset; then, if the body has not ended, the connection is closed. Closing at once loses the answer to the
 * reset; reading to the end could read gigabytes.
 */
export const dropRestOfUpload = (request: Http.IncomingMessage): void => {
  if (request.complete) return
  const socket = request.socket
  const from = socket.bytesRead
  const started = Date.now()
  request.resume()
  const timer = setInterval(() => {
    if (request.complete || socket.destroyed) return clearInterval(timer)
    if (Date.now() - started > UPLOAD_LINGER_MS || socket.bytesRead - from > UPLOAD_LINGER_BYTES) {
      clearInterval(timer)
      socket.destroy()
    }
  }, 50)
  timer.unref()
}

/** The request as a whole: its URL, then (when it declares one, and `json` holds) that its body is JSON. */
export const requestProblem = (
  url: string,
  headers: Readonly<Record<string, string | Array<string> | undefined>>,
  json = true
): { readonly status: number; readonly error: ErrorFields } | undefined => {
  const inUrl = urlProblem(url)
  if (inUrl !== undefined) return { status: 400, error: inUrl }
  if (!json || !declaresBody(headers)) return undefined
  const type = headers["content-type"] as string | undefined
  return isJsonMediaType(type) ? undefined : { status: 415, error: unsupportedMediaType(type) }
}
