import { Effect, Either, ParseResult, Schema } from "effect"
import { KnowledgeBaseId } from "../../schema/KnowledgeBases.js"
import type { ToolSpec } from "../agents/models/ModelProvider.js"
import { emptyToolSet, type RunScope, type ToolResult, type ToolSet } from "../agents/ToolSet.js"
import { toolInputSchema } from "../mcp/ToolSchema.js"
import { AgentKnowledge } from "./AgentKnowledge.js"
import { KnowledgeIndex, PgKnowledgeIndexLive } from "./KnowledgeIndex.js"
import type { BaseRow } from "./KnowledgeRepo.js"

const SearchInput = Schema.Struct({
  query: Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(1000)).annotations({
    description: "What to look for: words, \"a phrase\", `or`, `-word` (web-search syntax)."
  }),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 10))).annotations({
    description: "Most passages to return, 1–10 (default 5)."
  }),
  knowledge_base_id: Schema.optional(KnowledgeBaseId).annotations({
    description: "Search only this one of your knowledge bases."
  })
})

const specOf = (bases: ReadonlyArray<BaseRow>): ToolSpec => ({
  name: "search_knowledge",
  description: "Search your knowledge bases for passages that answer a question. Cite what you use by its " +
    "`citation` (document name and passage). Your knowledge bases:\n" +
    bases.map((b) => `- ${b.name} (${b.id})${b.description === "" ? "" : `: ${b.description.slice(0, 300)}`}`)
      .join("\n"),
  parameters: toolInputSchema(SearchInput)
})

const decode = Schema.decodeUnknownEither(SearchInput, { errors: "all", onExcessProperty: "error" })

/**
 * The `search_knowledge` tool of an agent with knowledge bases attached (none without). Its answer lists the
 * passages found, each with its citation (document name and id, chunk id and place), so the run's thread,
 * which records every tool call with its result, holds what the answer was drawn from.
 */
export class KnowledgeTools extends Effect.Service<KnowledgeTools>()("knowledge/KnowledgeTools", {
  effect: Effect.gen(function*() {
    const attachments = yield* AgentKnowledge
    const index = yield* KnowledgeIndex

    const search = (bases: ReadonlyArray<BaseRow>, args: unknown): Effect.Effect<ToolResult> => {
      const input = decode(args)
      if (Either.isLeft(input)) {
        return Effect.succeed({
          outcome: "error",
          content: `error: invalid arguments: ${ParseResult.TreeFormatter.formatErrorSync(input.left)}`
        })
      }
      const { knowledge_base_id, limit, query } = input.right
      const scope = knowledge_base_id === undefined ? bases : bases.filter((b) => b.id === knowledge_base_id)
      if (scope.length === 0) {
        return Effect.succeed({
          outcome: "error",
          content: `error: ${knowledge_base_id} is not one of your knowledge bases`
        })
      }
      const names = new Map(scope.map((b) => [b.id, b.name]))
      return Effect.map(
        index.search({ bases: scope, query, limit: limit ?? 5 }),
        (hits): ToolResult => ({
          outcome: "ok",
          content: JSON.stringify({
            results: hits.map((h, i) => ({
              citation: `[${i + 1}] ${h.document_name}${
                h.heading_path.length === 0 ? "" : ` › ${h.heading_path.join(" › ")}`
              } (document ${h.document_id}, chunk ${h.chunk_index})`,
              knowledge_base: names.get(h.knowledge_base_id) ?? h.knowledge_base_id,
              knowledge_base_id: h.knowledge_base_id,
              document_id: h.document_id,
              document_name: h.document_name,
              chunk_id: h.chunk_id,
              chunk_index: h.chunk_index,
              heading_path: h.heading_path,
              score: Math.round(h.score * 1e4) / 1e4,
              text: h.text
            })),
            ...(hits.length === 0 ? { note: "Nothing matched: try other words, or fewer of them." } : {})
          })
        })
      )
    }

    const forRun = (scope: RunScope): Effect.Effect<ToolSet> =>
      Effect.map(attachments.forRun(scope.organizationId, scope.agentId), (bases): ToolSet => {
        if (bases.length === 0) return emptyToolSet
        const spec = specOf(bases)
        return {
          specs: [spec],
          has: (name) => name === spec.name,
          call: (call) => search(bases, call.arguments)
        }
      })

    return { forRun } as const
  }),
  dependencies: [AgentKnowledge.Default, PgKnowledgeIndexLive]
}) {}
