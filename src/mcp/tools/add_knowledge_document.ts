import { Effect, Schema } from "effect"
import { AddDocument, KnowledgeBaseId, KnowledgeDocument } from "../../../schema/KnowledgeBases.js"
import { KnowledgeBases } from "../../knowledge/KnowledgeBases.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "add_knowledge_document",
  description: "Add a document to a knowledge base (POST /v1/knowledge-bases/{id}/documents; Builder and above): " +
    "inline `text`, a workspace `file_id` or a `url`. It is indexed in the background: its `status` turns from " +
    "processing to ready (or error).",
  input: Schema.Struct({ knowledge_base_id: KnowledgeBaseId, ...AddDocument.fields }),
  output: KnowledgeDocument,
  annotations: {
    title: "Add a knowledge document",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: true
  },
  run: ({ knowledge_base_id, ...input }, { caller }) =>
    Effect.flatMap(KnowledgeBases, (bases) => bases.addDocument(caller.principal, knowledge_base_id, input))
})
