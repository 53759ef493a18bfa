import { accepted, at, created, ok, type OperationExample, page } from "./Story.js"
import { fileId, returnsPolicy } from "./Workspace.js"

const knowledgeBaseId = "e4eaf6cd-f19d-4d1f-bf75-279737340c25"
const documentId = "602079f7-82ab-41f1-8618-bf350a873e8e"

const knowledgeBase = {
  id: knowledgeBaseId,
  name: "Customer policies",
  description: "Returns, refunds and shipping policies of the shop.",
  language: "english",
  document_count: 0,
  created_at: at(13, "14:10:00"),
  updated_at: at(13, "14:10:00")
}
/** With the returns policy in it, read and indexed. */
const withPolicy = { ...knowledgeBase, document_count: 1 }

const returnsDocument = {
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
  replaces: null,
  created_at: at(13, "14:12:00"),
  updated_at: at(13, "14:12:00")
}
const readyDocument = {
  ...returnsDocument,
  status: "ready",
  progress: 1,
  chunk_count: 7,
  updated_at: at(13, "14:12:03")
}

/** Knowledge bases, their documents, and the agents that search them. */
export const knowledgeExamples: Record<string, OperationExample> = {
  createKnowledgeBase: {
    request: { name: knowledgeBase.name, description: knowledgeBase.description, language: "english" },
    response: created(knowledgeBase)
  },
  listKnowledgeBases: { response: ok(page(withPolicy)) },
  getKnowledgeBase: { response: ok(withPolicy) },
  updateKnowledgeBase: {
    request: { description: "Returns, refunds, shipping and warranty policies of the shop." },
    response: ok({
      ...withPolicy,
      description: "Returns, refunds, shipping and warranty policies of the shop.",
      updated_at: at(15, "11:40:00")
    })
  },
  addKnowledgeDocument: {
    request: { name: "policies/returns.md", file_id: fileId },
    response: accepted(returnsDocument)
  },
  listKnowledgeDocuments: { response: ok(page(readyDocument)) },
  getKnowledgeDocument: { response: ok(readyDocument) },
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
  listAgentKnowledgeBases: { response: ok({ items: [withPolicy] }) }
}
