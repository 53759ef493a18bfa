import { adaId, agentId, allOf, at, connectionId, created, ok, type OperationExample, page } from "./Story.js"

export const fileId = "bbddcef2-3bd8-456b-84e0-207b9da07c5f"
const reportFileId = "02a92f30-a311-4882-a3de-ac7dc5fbd914"
const functionId = "90bffc4e-1fcb-4e47-9e86-28d257ee4fa0"

const file = (id: string, name: string, size: number, sha256: string, scope: "organization" | "agent") => ({
  id,
  name,
  size,
  sha256,
  content_type: "text/markdown",
  scope,
  agent_id: scope === "agent" ? agentId : null,
  owner: scope === "agent" ? { type: "agent", id: agentId } : { type: "user", id: adaId },
  created_at: scope === "agent" ? at(15, "07:00:08") : at(13, "14:00:00")
})
export const returnsPolicy = file(
  fileId,
  "policies/returns.md",
  3412,
  "68e5bd0935fb8c44744beb25635a0bea68e4e9906f5bbd604a0b4467861bd748",
  "organization"
)

const orderStatusCode = `export default async (input, ctx) => {
  ctx.log("looking up order " + input.order_id)
  const answer = await ctx.connectors.invoke(input.connection_id, "getOrder", { path_params: { id: input.order_id } })
  return { order_id: input.order_id, status: answer.body.status }
}`
const orderStatusFunction = {
  name: "order_status",
  description: "The status of an order, by its number.",
  input_schema: {
    type: "object",
    required: ["order_id", "connection_id"],
    properties: { order_id: { type: "string" }, connection_id: { type: "string", format: "uuid" } }
  },
  code: orderStatusCode,
  timeout_ms: 5000,
  memory_mb: 32
}

const orderStatus = {
  id: functionId,
  ...orderStatusFunction,
  version: 1,
  current_version: 1,
  created_at: at(14, "12:00:00"),
  updated_at: at(14, "12:00:00")
}
/** Version 2 waits longer for a slow order system; version 1 stays readable (`?version=1`). */
const orderStatusV2 = {
  ...orderStatus,
  timeout_ms: 8000,
  version: 2,
  current_version: 2,
  updated_at: at(15, "11:20:00")
}
const functionVersion = (fn: typeof orderStatus, created_at: string) => ({
  version: fn.version,
  name: fn.name,
  description: fn.description,
  timeout_ms: fn.timeout_ms,
  memory_mb: fn.memory_mb,
  created_by: adaId,
  created_at
})
const attachedFunction = {
  agent_id: agentId,
  function_id: functionId,
  name: "order_status",
  attached_at: at(14, "12:05:00")
}

/** Files and custom functions. */
export const workspaceExamples: Record<string, OperationExample> = {
  uploadFile: { response: created(returnsPolicy) },
  getFile: { response: ok(returnsPolicy) },
  listFiles: {
    response: ok(page(
      file(
        reportFileId,
        "digests/2026-01-15.md",
        918,
        "1ec79c399e87383b131c7673d45177b041a9d4cf0208e3f22521679a793ec398",
        "agent"
      ),
      returnsPolicy
    ))
  },
  createFunction: {
    request: orderStatusFunction,
    response: created(orderStatus)
  },
  listFunctions: { response: ok(allOf(orderStatusV2)) },
  getFunction: { response: ok(orderStatusV2) },
  updateFunction: { request: { timeout_ms: 8000 }, response: ok(orderStatusV2) },
  listFunctionVersions: {
    response: ok({
      items: [
        functionVersion(orderStatusV2, orderStatusV2.updated_at),
        functionVersion(orderStatus, orderStatus.created_at)
      ]
    })
  },
  attachFunction: { response: ok(attachedFunction) },
  listAgentFunctions: { response: ok({ items: [attachedFunction] }) },
  invokeFunction: {
    request: { input: { order_id: "1234", connection_id: connectionId } },
    response: ok({
      output: { order_id: "1234", status: "shipped" },
      logs: ["looking up order 1234"],
      logs_truncated: false,
      duration_ms: 96.4,
      version: 1
    })
  }
}
