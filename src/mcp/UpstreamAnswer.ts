import { Schema } from "effect"

// a tool result goes to a model: a larger answer is cut, with a note saying so
const MAX_BODY_CHARS = 1_000_000

/** A connector operation's answer as a tool result: the target's status and body. */
export const UpstreamAnswer = Schema.Struct({
  status: Schema.Int,
  content_type: Schema.NullOr(Schema.String),
  body: Schema.Unknown.annotations({ description: "Parsed JSON when the target answered JSON, else text." }),
  truncated: Schema.Boolean
})

/** Shared by the `invoke_operation` tool and its fast path, so both answer alike. */
export const upstreamAnswer = (
  status: number,
  contentType: string | Array<string> | undefined,
  text: string
): typeof UpstreamAnswer.Type => {
  const type = Array.isArray(contentType) ? contentType[0] ?? null : contentType ?? null
  const truncated = text.length > MAX_BODY_CHARS
  let body: unknown = truncated ? text.slice(0, MAX_BODY_CHARS) : text
  if (!truncated && type !== null && /[/+]json\b/i.test(type) && text !== "") {
    try {
      body = JSON.parse(text)
    } catch {
      // the target said JSON and sent something else: pass its text on
    }
  }
  return { status, content_type: type, body, truncated }
}
