import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { AgentKnowledge } from "./AgentKnowledge.js"
import { KnowledgeBases } from "./KnowledgeBases.js"
import { KnowledgeLive } from "./KnowledgeLive.js"

const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)

export const KnowledgeHttpLive = HttpApiBuilder.group(Api, "knowledgeBases", (handlers) =>
  Effect.gen(function*() {
    const bases = yield* KnowledgeBases
    const agents = yield* AgentKnowledge
    return handlers
      .handle("listKnowledgeBases", ({ urlParams }) => as((p) => bases.list(p, urlParams)))
      .handle("createKnowledgeBase", ({ payload }) => as((p) => bases.create(p, payload)))
      .handle("getKnowledgeBase", ({ path }) => as((p) => bases.get(p, path.knowledge_base_id)))
      .handle("updateKnowledgeBase", ({ path, payload }) => as((p) => bases.update(p, path.knowledge_base_id, payload)))
      .handle("deleteKnowledgeBase", ({ path }) => as((p) => bases.remove(p, path.knowledge_base_id)))
      .handle("addKnowledgeDocument", ({ path, payload }) =>
        as((p) => bases.addDocument(p, path.knowledge_base_id, payload)))
      .handle("listKnowledgeDocuments", ({ path, urlParams }) =>
        as((p) =>
          bases.listDocuments(p, path.knowledge_base_id, urlParams)
        ))
      .handle("getKnowledgeDocument", ({ path }) =>
        as((p) =>
          bases.getDocument(p, path.knowledge_base_id, path.document_id)
        ))
      .handle("deleteKnowledgeDocument", ({ path }) =>
        as((p) =>
          bases.removeDocument(p, path.knowledge_base_id, path.document_id)
        ))
      .handle("searchKnowledgeBase", ({ path, payload }) =>
        as((p) => bases.search(p, path.knowledge_base_id, payload)))
      .handle("listAgentKnowledgeBases", ({ path }) => as((p) => agents.list(p, path.agent_id)))
      .handle("attachKnowledgeBase", ({ path }) => as((p) => agents.attach(p, path.agent_id, path.knowledge_base_id)))
      .handle("detachKnowledgeBase", ({ path }) => as((p) => agents.detach(p, path.agent_id, path.knowledge_base_id)))
  })).pipe(Layer.provide(KnowledgeLive))
