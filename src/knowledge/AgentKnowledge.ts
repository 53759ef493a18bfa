import { Effect } from "effect"
import { NotFound } from "../../schema/Errors.js"
import type { AgentId, OrganizationId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { mayUse } from "../agents/Agents.js"
import { AuditLog } from "../audit/AuditLog.js"
import { requirePermission } from "../identity/IdentityPolicy.js"
import { TtlCache } from "../support/TtlCache.js"
import { isUuid } from "../support/Uuid.js"
import { KnowledgeBases, toBase } from "./KnowledgeBases.js"
import { type BaseRow, KnowledgeRepo } from "./KnowledgeRepo.js"

// an agent's run reads its bases from here: a change made on another node shows within this long
const RUN_CACHE_MS = 5_000

/**
 * Which knowledge bases an agent searches (spec 2.7): attached and detached by Builders who may use the
 * agent, audited; listed by anyone who may use it. Runs read the attachments through a short cache.
 */
export class AgentKnowledge extends Effect.Service<AgentKnowledge>()("knowledge/AgentKnowledge", {
  effect: Effect.gen(function*() {
    const repo = yield* KnowledgeRepo
    const bases = yield* KnowledgeBases
    const audit = yield* AuditLog
    const cache = new TtlCache<AgentId, ReadonlyArray<BaseRow>>(RUN_CACHE_MS)

    /** The agent, if it is a live agent of the organization that the principal may use; else a 404. */
    const usableAgent = (principal: Principal, id: string) =>
      Effect.gen(function*() {
        const agentId = id as AgentId
        if (
          isUuid(id) && mayUse(principal, agentId) && (yield* repo.agentExists(principal.organizationId, agentId))
        ) {
          return agentId
        }
        return yield* NotFound.of("Agent", id)
      })

    const attach = Effect.fn("AgentKnowledge.attach")(function*(principal: Principal, agent: string, baseId: string) {
      yield* requirePermission(principal, Policy.attachKnowledgeBases)
      const agentId = yield* usableAgent(principal, agent)
      const base = yield* bases.ref(principal, baseId)
      yield* repo.attach(principal.organizationId, agentId, base.id).pipe(
        audit.recorded(principal, (attached) =>
          attached
            ? {
              action: "ATTACH_KNOWLEDGE_BASE",
              targets: [{ type: "agent", id: agentId }, { type: "knowledge_base", id: base.id, name: base.name }]
            }
            : undefined)
      )
      cache.delete(agentId)
    })

    const detach = Effect.fn("AgentKnowledge.detach")(function*(principal: Principal, agent: string, baseId: string) {
      yield* requirePermission(principal, Policy.detachKnowledgeBases)
      const agentId = yield* usableAgent(principal, agent)
      const base = yield* bases.ref(principal, baseId)
      const detached = yield* repo.detach(principal.organizationId, agentId, base.id).pipe(
        audit.recorded(principal, (detached) =>
          detached
            ? {
              action: "DETACH_KNOWLEDGE_BASE",
              targets: [{ type: "agent", id: agentId }, { type: "knowledge_base", id: base.id, name: base.name }]
            }
            : undefined)
      )
      cache.delete(agentId)
      if (!detached) return yield* NotFound.of("Attachment of knowledge base", base.id)
    })

    const list = Effect.fn("AgentKnowledge.list")(function*(principal: Principal, agent: string) {
      const agentId = yield* usableAgent(principal, agent)
      const rows = yield* repo.basesOfAgent(principal.organizationId, agentId)
      return { items: rows.map(toBase) }
    })

    /** The bases an agent's run searches. */
    const forRun = (organizationId: OrganizationId, agentId: AgentId) =>
      Effect.suspend(() => {
        const cached = cache.get(agentId)
        return cached !== undefined
          ? Effect.succeed(cached)
          : Effect.map(repo.basesOfAgent(organizationId, agentId), (rows) => cache.set(agentId, rows))
      })

    return { attach, detach, list, forRun } as const
  }),
  dependencies: [KnowledgeRepo.Default, KnowledgeBases.Default, AuditLog.Default]
}) {}
