import { Effect, Schema } from "effect"
import { KnowledgeBaseId, SearchKnowledge, SearchResults } from "../../../schema/KnowledgeBases.js"
import { KnowledgeBases } from "../../knowledge/KnowledgeBases.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "search_knowledge",
  description: "Full-text search of a knowledge base (POST /v1/knowledge-bases/{id}/search): the best passages " +
    "with their document (name and id), chunk, score and a snippet. Cite the document name when you use one.",
  input: Schema.Struct({ knowledge_base_id: KnowledgeBaseId, ...SearchKnowledge.fields }),
  output: SearchResults,
  annotations: {
    title: "Search a knowledge base",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ knowledge_base_id, ...input }, { caller }) =>
    Effect.flatMap(KnowledgeBases, (bases) => bases.search(caller.principal, knowledge_base_id, input))
})
