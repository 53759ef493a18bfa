import { type Effect, ParseResult } from "effect"
import { issuesOf } from "../support/Issues.js"
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

export const sse = (message: unknown) => `event: message\ndata: ${bodyJson(message)}\n\n`

/**
 * A batch's answer (MCP 2025-03-26), from its messages' JSON answers: their responses as one array, or 202 when
 * it held no request; a refusal at the HTTP level (which McpProtocol checks before running any) refuses it.
 */
export const batchAnswer = (answers: ReadonlyArray<Answer>): Answer => {
  const refused = answers.find((a) => a._tag === "Json" && a.status >= 400)
  if (refused !== undefined) return refused
  const responses = answers.flatMap((a) => a._tag === "Json" ? [a.body] : [])
  return responses.length === 0 ? { _tag: "Empty", status: 202 } : rpcResponse(responses)
}

/** A `tools/call` result: a tool's output or its error, as JSON. */
export type ToolCallResult = unknown

export const toolError = (error: ToolFailure): ToolCallResult => ({
  content: [{ type: "text", text: JSON.stringify({ error }) }],
  structuredContent: { error },
  isError: true
})

export const asStructured = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value : { items: value }

/** A tool result's `structuredContent` as JSON text (not serialized: symbol keys are not). */
const STRUCTURED = Symbol.for("switchyard/mcp/structuredContentJson")

/** A tool's encoded output as its `tools/call` result. */
export const toolResult = (encoded: unknown, text?: string): ToolCallResult =>
  toolResultJson(encoded, JSON.stringify(encoded), text)

/** The same, given the output's JSON text (`json` must be what JSON.stringify writes for it, whitespace aside). */
export const toolResultJson = (encoded: unknown, json: string, text?: string): ToolCallResult => {
  const structured = asStructured(encoded)
  return {
    content: [{ type: "text", text: text === undefined ? json : `${text}\n\n${json}` }],
    structuredContent: structured,
    [STRUCTURED]: structured === encoded ? json : `{"items":${json}}`
  }
}

/**
 * An answer's body as JSON text, for every transport. The same text as JSON.stringify gives (a `ToolJson`
 * result's whitespace aside), but a tool result's `structuredContent`, serialized once for its text content, is
 * not serialized again inside the envelope: on the hot call (a target's answer passed on) that was a tenth of
 * the work.
 */
export const bodyJson = (body: unknown): string => {
  const envelope = body as { readonly id?: unknown; readonly result?: Record<PropertyKey, unknown> } | null
  const structured = envelope?.result?.[STRUCTURED]
  if (typeof structured !== "string" || Object.keys(envelope!).length !== 3) return JSON.stringify(body)
  return `{"jsonrpc":"2.0","id":${JSON.stringify(envelope!.id)},"result":{"content":${
    JSON.stringify(envelope!.result!["content"])
  },"structuredContent":${structured}}}`
}

/** Arguments that do not match a tool's input schema, as the tool error a model reads. */
export const validationFailed = (error: ParseResult.ParseError): ToolCallResult => {
  const issues = issuesOf(error)
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
