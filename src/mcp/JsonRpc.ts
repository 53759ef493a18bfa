/** JSON-RPC 2.0 as MCP uses it: ids are strings or integers; a message without `method` is a response. */
export type JsonRpcId = string | number

export interface JsonRpcRequest {
  readonly jsonrpc: "2.0"
  readonly id?: JsonRpcId
  readonly method: string
  readonly params?: Record<string, unknown>
}

export const ErrorCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603
} as const

export const result = (id: JsonRpcId, value: unknown) => ({ jsonrpc: "2.0" as const, id, result: value })

export const failure = (id: JsonRpcId | null, code: number, message: string, data?: unknown) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code, message, ...(data === undefined ? {} : { data }) }
})

export type Classified =
  | { readonly _tag: "Request"; readonly message: JsonRpcRequest & { readonly id: JsonRpcId } }
  | { readonly _tag: "Notification"; readonly message: JsonRpcRequest }
  | { readonly _tag: "Response" }
  /** `id`: the message's id when it has a valid one (JSON-RPC 2.0 §5: the error answers it), else null. */
  | { readonly _tag: "Invalid"; readonly reason: string; readonly id: JsonRpcId | null }

const isId = (id: unknown): id is JsonRpcId =>
  typeof id === "string" || (typeof id === "number" && Number.isInteger(id))

export const classify = (message: unknown): Classified => {
  if (Array.isArray(message)) {
    return {
      _tag: "Invalid",
      reason: "A message is one JSON-RPC object, not an array.",
      id: null
    }
  }
  if (typeof message !== "object" || message === null) {
    return { _tag: "Invalid", reason: "The body must be a JSON-RPC request object.", id: null }
  }
  const m = message as Record<string, unknown>
  const id = isId(m["id"]) ? m["id"] : null
  if (m["jsonrpc"] !== "2.0") return { _tag: "Invalid", reason: "`jsonrpc` must be \"2.0\".", id }
  if (
    m["params"] !== undefined && (typeof m["params"] !== "object" || m["params"] === null || Array.isArray(m["params"]))
  ) {
    return { _tag: "Invalid", reason: "`params` must be an object.", id }
  }
  if (typeof m["method"] !== "string") {
    return "result" in m || "error" in m ? { _tag: "Response" } : { _tag: "Invalid", reason: "No `method`.", id }
  }
  if (!("id" in m)) return { _tag: "Notification", message: m as unknown as JsonRpcRequest }
  if (id === null) return { _tag: "Invalid", reason: "`id` must be a string or an integer.", id }
  return { _tag: "Request", message: m as unknown as JsonRpcRequest & { id: JsonRpcId } }
}
