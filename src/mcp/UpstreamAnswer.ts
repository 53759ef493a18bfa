import { Schema } from "effect"
import type { Readable } from "node:stream"
import { StringDecoder } from "node:string_decoder"
import { ToolJson } from "./ToolJson.js"

// a tool result goes to a model: a larger answer is cut, with a note saying so
const MAX_BODY_CHARS = 1_000_000
const JSON_TYPE = /[/+]json\b/i

/** A connector operation's answer as a tool result: the target's status and body. */
export const UpstreamAnswer = Schema.Struct({
  status: Schema.Int,
  content_type: Schema.NullOr(Schema.String),
  body: Schema.Unknown.annotations({ description: "Parsed JSON when the target answered JSON, else text." }),
  truncated: Schema.Boolean
})

/**
 * Whether a body can be read whole without reading past the cut: its declared length is at most
 * MAX_BODY_CHARS bytes (never fewer characters than bytes in UTF-8; the HTTP parser stops at that length).
 */
export const fitsWhole = (contentLength: string | Array<string> | undefined) =>
  typeof contentLength === "string" && contentLength !== "" && Number(contentLength) <= MAX_BODY_CHARS

/**
 * A target's body as text, read only until it holds more than MAX_BODY_CHARS characters (enough to cut it and
 * know it was cut): then the stream is destroyed, which aborts the rest of the response and frees the
 * connection, instead of reading a body of any size into memory. Rejects with the stream's error.
 */
export const upstreamText = (body: Readable): Promise<string> =>
  new Promise((resolve, reject) => {
    const decoder = new StringDecoder("utf8")
    let text = ""
    const onData = (chunk: Buffer) => {
      text += decoder.write(chunk)
      if (text.length <= MAX_BODY_CHARS) return
      done()
      body.destroy()
      resolve(text)
    }
    const onEnd = () => {
      done()
      resolve(text + decoder.end())
    }
    const onError = (error: Error) => {
      done()
      reject(error)
    }
    const done = () => {
      body.off("data", onData).off("end", onEnd).off("error", onError)
      // the abort that destroy() starts may still report an error: nobody needs it any more
      body.on("error", ignore)
    }
    body.on("data", onData).once("end", onEnd).once("error", onError)
  })

const ignore = () => {}

/** The answer's value, and a JSON body's text as the target sent it (surrounding whitespace cut). */
const parse = (status: number, contentType: string | Array<string> | undefined, text: string) => {
  const type = Array.isArray(contentType) ? contentType[0] ?? null : contentType ?? null
  const truncated = text.length > MAX_BODY_CHARS
  let body: unknown = truncated ? text.slice(0, MAX_BODY_CHARS) : text
  let json: string | undefined
  if (!truncated && type !== null && JSON_TYPE.test(type) && text !== "") {
    try {
      body = JSON.parse(text)
      // JSON.parse took it, so the ends trim() cuts are JSON whitespace only
      json = text.trim()
    } catch {
      // the target said JSON and sent something else: pass its text on
    }
  }
  return { value: { status, content_type: type, body, truncated }, json }
}

/** The target's answer as a value (FunctionCalls.ts hands it to a function). */
export const upstreamAnswer = (
  status: number,
  contentType: string | Array<string> | undefined,
  text: string
): typeof UpstreamAnswer.Type => parse(status, contentType, text).value

/**
 * The target's answer as a tool result with its JSON, shared by the `invoke_operation` tool and its fast path,
 * so both answer alike. A JSON body goes into that JSON as the target sent it: parsing it checks that it is
 * JSON, and serializing the parsed value again would only copy it (a tenth of the hot call's CPU).
 */
export const upstreamAnswerJson = (
  status: number,
  contentType: string | Array<string> | undefined,
  text: string
): ToolJson<typeof UpstreamAnswer.Type> => {
  const { json, value } = parse(status, contentType, text)
  return new ToolJson(
    value,
    `{"status":${status},"content_type":${JSON.stringify(value.content_type)},"body":${
      json ?? JSON.stringify(value.body)
    },"truncated":${value.truncated}}`
  )
}
