/**
 * A server-sent events (text/event-stream) parser over a byte stream, as both streaming model protocols
 * use it. Follows the WHATWG event-stream rules that matter here: CR, LF or CRLF line ends (a CR at the
 * end of one network chunk may be half of a CRLF), `:` comment lines (keep-alives from proxies), multi-line
 * `data`, and a final event without its blank line (servers that close right after the last event).
 */

export interface ServerSentEvent {
  /** The `event:` field; "message" when the server sent none (Chat Completions never does). */
  readonly event: string
  readonly data: string
}

export async function* serverSentEvents(
  chunks: AsyncIterable<Buffer | string> | Iterable<Buffer | string>
): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder()
  let pending = ""
  let event = ""
  let data: Array<string> = []

  // returns the event a blank line completes
  const line = (text: string): ServerSentEvent | undefined => {
    if (text === "") {
      const complete = data.length > 0 ? { event: event === "" ? "message" : event, data: data.join("\n") } : undefined
      event = ""
      data = []
      return complete
    }
    if (text.startsWith(":")) return undefined
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    let value = colon === -1 ? "" : text.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    if (field === "event") event = value
    else if (field === "data") data.push(value)
    return undefined
  }

  const split = function*(text: string, final: boolean): Generator<ServerSentEvent> {
    const holdCr = !final && text.endsWith("\r")
    const lines = (holdCr ? text.slice(0, -1) : text).split(/\r\n|\n|\r/)
    pending = final ? "" : lines.pop()! + (holdCr ? "\r" : "")
    for (const text of lines) {
      const complete = line(text)
      if (complete !== undefined) yield complete
    }
  }

  let first = true
  for await (const chunk of chunks) {
    let text = typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true })
    if (first && text !== "") {
      if (text.startsWith("\uFEFF")) text = text.slice(1)
      first = false
    }
    yield* split(pending + text, false)
  }
  yield* split(pending + decoder.decode(), true)
  const last = line("")
  if (last !== undefined) yield last
}
