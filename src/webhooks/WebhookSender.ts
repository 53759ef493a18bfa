import { type Dispatcher, request } from "undici"
import { storableText } from "../support/StorableText.js"
import { signatureHeader } from "./WebhookSignature.js"

/** Characters of the receiver's answer kept with the attempt. */
const EXCERPT_CHARS = 1024
/** Bytes of an answer read at most; the connection is closed past them. */
const READ_LIMIT = 64 * 1024

export interface Outgoing {
  readonly url: string
  /** `webhook-id`: the delivery's id, the same on every attempt. */
  readonly id: string
  readonly body: string
  /** The signing keys, the current first. */
  readonly keys: ReadonlyArray<Buffer>
}

export interface Answer {
  /** The HTTP status; null when there was no answer. */
  readonly status: number | null
  readonly latencyMs: number
  readonly excerpt: string | null
  readonly error: string | null
}

const USER_AGENT = "Switchyard-Webhooks/1"

/**
 * One attempt: POST the body, signed for this attempt's time (Standard Webhooks: receivers refuse old
 * timestamps, so a retry is signed anew under the same `webhook-id`), through the egress-guarded `dispatcher`.
 * Redirects are not followed. Never fails: an error is an answer without a status.
 */
export const send = async (
  dispatcher: Dispatcher,
  message: Outgoing,
  timeoutMs: number,
  explain: (error: unknown) => string
): Promise<Answer> => {
  const timestamp = Math.floor(Date.now() / 1000)
  const started = performance.now()
  // one deadline for the whole attempt: undici's own timers restart on each informational (1xx) answer and
  // on each gap in the body, so a receiver sending 102s, or its answer a byte at a time, would hold the
  // attempt (and its lease) for good; and connecting has a timeout of its own (10 s)
  const abort = new AbortController()
  const deadline = setTimeout(() => abort.abort(), timeoutMs)
  try {
    const response = await request(message.url, {
      method: "POST",
      dispatcher,
      signal: abort.signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      headers: {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(message.keys, message.id, timestamp, message.body)
      },
      body: message.body
    })
    const chunks: Array<Buffer> = []
    let size = 0
    for await (const chunk of response.body) {
      chunks.push(chunk as Buffer)
      size += (chunk as Buffer).length
      if (size >= READ_LIMIT) {
        response.body.destroy()
        break
      }
    }
    const text = Buffer.concat(chunks).toString("utf8")
    return {
      status: response.statusCode,
      latencyMs: performance.now() - started,
      // any bytes a receiver sends (NUL, an emoji cut at the limit) must not keep the attempt from being recorded
      excerpt: text === "" ? null : storableText(text, EXCERPT_CHARS),
      error: null
    }
  } catch (error) {
    const timedOut = abort.signal.aborted || (error as { code?: string }).code?.includes("TIMEOUT") === true
    return {
      status: null,
      latencyMs: performance.now() - started,
      excerpt: null,
      error: timedOut ? `no answer within ${timeoutMs} ms` : storableText(explain(error), EXCERPT_CHARS)
    }
  } finally {
    clearTimeout(deadline)
  }
}
