import { Effect, Schema } from "effect"
import { KnowledgeBasePage } from "../../../schema/KnowledgeBases.js"
import { KnowledgeBases } from "../../knowledge/KnowledgeBases.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_knowledge_bases",
  description: "The organization's knowledge bases, oldest first (GET /v1/knowledge-bases). Search one with " +
    "search_knowledge.",
  input: Schema.Struct({
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: KnowledgeBasePage,
  annotations: {
    title: "List knowledge bases",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(KnowledgeBases, (bases) => bases.list(caller.principal, input))
})
