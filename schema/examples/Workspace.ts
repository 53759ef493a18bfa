import { accepted, adaId, agentId, at, connectionId, created, ok, type OperationExample, page } from "./Story.js"

const fileId = "bbddcef2-3bd8-456b-84e0-207b9da07c5f"
const reportFileId = "02a92f30-a311-4882-a3de-ac7dc5fbd914"
const knowledgeBaseId = "e4eaf6cd-f19d-4d1f-bf75-279737340c25"
const documentId = "602079f7-82ab-41f1-8618-bf350a873e8e"
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
const returnsPolicy = file(
  fileId,
  "policies/returns.md",
  3412,
  "68e5bd0935fb8c44744beb25635a0bea68e4e9906f5bbd604a0b4467861bd748",
  "organization"
)

const knowledgeBase = {
  id: knowledgeBaseId,
  name: "Customer policies",
  description: "Returns, refunds and shipping policies of the shop.",
  language: "english",
  document_count: 0,
  created_at: at(13, "14:10:00"),
  updated_at: at(13, "14:10:00")
}

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

/** Files, knowledge bases and functions. */
export const workspaceExamples: Record<string, OperationExample> = {
  uploadFile: { response: created(returnsPolicy) },
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
  createKnowledgeBase: {
    request: { name: knowledgeBase.name, description: knowledgeBase.description, language: "english" },
    response: created(knowledgeBase)
  },
  addKnowledgeDocument: {
    request: { name: "policies/returns.md", file_id: fileId },
    response: accepted({
      id: documentId,
      knowledge_base_id: knowledgeBaseId,
      name: "policies/returns.md",
      format: "md",
      size: returnsPolicy.size,
      source: { type: "file", file_id: fileId, url: null },
      status: "processing",
      progress: 0,
      chunk_count: 0,
      error: null,
      created_at: at(13, "14:12:00"),
      updated_at: at(13, "14:12:00")
    })
  },
  searchKnowledgeBase: {
    request: { query: "refund damaged parcel", limit: 5 },
    response: ok({
      items: [{
        knowledge_base_id: knowledgeBaseId,
        document_id: documentId,
        document_name: "policies/returns.md",
        chunk_id: "490ba288-9b4a-4361-9b85-16cc325e60b7",
        chunk_index: 3,
        heading_path: ["Returns", "Damaged goods"],
        score: 0.42,
        snippet: "A **damaged** **parcel** is **refunded** in full, shipping included.",
        text: "A damaged parcel is refunded in full, shipping included, when the customer reports it within 14 days."
      }]
    })
  },
  createFunction: {
    request: orderStatusFunction,
    response: created({
      id: functionId,
      ...orderStatusFunction,
      version: 1,
      current_version: 1,
      created_at: at(14, "12:00:00"),
      updated_at: at(14, "12:00:00")
    })
  },
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
