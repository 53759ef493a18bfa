import { type Effect, ParseResult } from "effect"
import type { ToolFailure } from "./McpTool.js"

/**
 * What an MCP request is answered, before it becomes an HTTP response: the Effect routes (McpEndpoint.ts) and
 * the plain-Node fast path (McpFastPath.ts) both write it.
 */
export type Answer =
  | { readonly _tag: "Json"; readonly status: number; readonly body: unknown; readonly headers: Record<string, string> }
  | { readonly _tag: "Empty"; readonly status: number }
  /** An SSE stream: `run` sends events, then the stream ends. */
  | { readonly _tag: "Events"; readonly run: (send: (event: string) => Effect.Effect<void>) => Effect.Effect<void> }

/** One of our errors at the HTTP level (the transport writes the REST envelope around it). */
export const httpError = (
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {}
): Answer => ({ _tag: "Json", status, body: { error: { code, message } }, headers })

export const rpcResponse = (body: unknown, status = 200, headers: Record<string, string> = {}): Answer => ({
  _tag: "Json",
  status,
  body,
  headers
})

export const sse = (message: unknown) => `event: message\ndata: ${JSON.stringify(message)}\n\n`

/** A `tools/call` result: a tool's output or its error, as JSON. */
export type ToolCallResult = unknown

export const toolError = (error: ToolFailure): ToolCallResult => ({
  content: [{ type: "text", text: JSON.stringify({ error }) }],
  structuredContent: { error },
  isError: true
})

export const asStructured = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value : { items: value }

/** A tool's encoded output as its `tools/call` result. */
export const toolResult = (encoded: unknown, text?: string): ToolCallResult => {
  const json = JSON.stringify(encoded)
  return {
    content: [{ type: "text", text: text === undefined ? json : `${text}\n\n${json}` }],
    structuredContent: asStructured(encoded)
  }
}

/** Arguments that do not match a tool's input schema, as the tool error a model reads. */
export const validationFailed = (error: ParseResult.ParseError): ToolCallResult => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error).map((i) => ({
    path: i.path.map(String).join("."),
    message: i.message
  }))
  return toolError({
    code: "validation_failed",
    message: issues.map((i) => `${i.path === "" ? "arguments" : `\`${i.path}\``}: ${i.message}`).join("; "),
    details: { issues }
  })
}

/** What a tool that failed on our side tells the model (the cause is logged, never sent). */
export const toolDefect: ToolCallResult = toolError({
  code: "internal_error",
  message: "The tool failed on our side; try again later."
})
