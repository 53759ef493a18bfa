import { Effect } from "effect"
import { emptyToolSet, type RunScope, type ToolSet } from "../agents/ToolSet.js"

/** The `search_knowledge` tool of an agent with knowledge bases attached (issue 25; not built yet). */
export class KnowledgeTools extends Effect.Service<KnowledgeTools>()("knowledge/KnowledgeTools", {
  succeed: {
    forRun: (_scope: RunScope): Effect.Effect<ToolSet> => Effect.succeed(emptyToolSet)
  }
}) {}
