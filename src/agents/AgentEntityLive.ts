import { Entity } from "@effect/cluster"
import { Effect } from "effect"
import { AgentEntity, BudgetExhausted } from "../../cluster/AgentEntity.js"
import type { AgentId } from "../../schema/Ids.js"
import { AgentRepo } from "./AgentRepo.js"

export const AgentEntityLive = AgentEntity.toLayer(
  Effect.gen(function*() {
    const agentId = (yield* Entity.CurrentAddress).entityId as string as AgentId
    const repo = yield* AgentRepo
    // outstanding reservations of calls in flight; lost with the entity (a failover may overshoot by them)
    const reservations = new Map<string, number>()
    const reserved = () => Array.from(reservations.values()).reduce((a, b) => a + b, 0)

    return {
      Reserve: ({ payload }) =>
        Effect.gen(function*() {
          const agent = yield* repo.findById(agentId)
          if (agent === undefined || agent.budget === null) return
          const spent = yield* repo.spent(agentId, agent.budget)
          if (spent + reserved() + payload.estimate_usd > agent.budget.limit_usd) {
            yield* repo.markExhausted(agentId, agent.budget)
            return yield* new BudgetExhausted({
              limit_usd: agent.budget.limit_usd,
              spent_usd: spent,
              reserved_usd: reserved()
            })
          }
          reservations.set(payload.reservation, payload.estimate_usd)
        }),
      Settle: ({ payload }) =>
        Effect.gen(function*() {
          reservations.delete(payload.reservation)
          const agent = yield* repo.findById(agentId)
          if (agent?.budget != null && payload.actual_usd > 0) {
            yield* repo.addSpend(agentId, agent.budget, payload.actual_usd)
          }
        }),
      Forget: () => Effect.sync(() => reservations.clear())
    }
  })
)
