import { Layer } from "effect"
import { AgentKnowledge } from "./AgentKnowledge.js"
import { KnowledgeBases } from "./KnowledgeBases.js"

/**
 * Knowledge bases: the service REST and MCP call, agents' attachments, and (inside KnowledgeBases) this
 * node's ingestion workers. One of each per node: every user of it provides this same layer.
 */
export const KnowledgeLive = AgentKnowledge.Default.pipe(Layer.provideMerge(KnowledgeBases.Default))
