import { Entity } from "@effect/cluster"
import { Effect, Schedule } from "effect"
import { AgentEntity, BudgetExhausted } from "../../cluster/AgentEntity.js"
import type { Budget } from "../../schema/Agents.js"
import type { AgentId } from "../../schema/Ids.js"
import { AgentRepo, periodStart } from "./AgentRepo.js"

/** A holder not heard from for this long is taken as gone (it reports every 2 s while it holds any). */
const HOLDER_TTL_MS = 15_000

/** How long a lease request waits for budget other nodes hold unused (they hand it back within ~0.5 s). */
const WAIT_MS = 1_000

/**
 * The budget of one agent, shared out to the nodes that run its tasks (see AgentEntity). What it keeps is
 * in memory: spent in the period (read once, then kept up to date by what holders report, each report
 * also added to the agent's recorded spend), what each holder holds, and the per-call reservations of
 * nodes of an earlier release. Should the entity move to another node, the new one reads the spend again
 * and learns what each holder holds from its next report (within 2 s); a holder gone silent leaves what
 * it held counted as spent, since its calls may have spent it.
 */
export const AgentEntityLive = AgentEntity.toLayer(
  Effect.gen(function*() {
    const agentId = (yield* Entity.CurrentAddress).entityId as string as AgentId
    const repo = yield* AgentRepo
    const holders = new Map<string, { held: number; at: number }>()
    const reservations = new Map<string, number>()
    let spent = 0
    let lost = 0
    // the budget period whose spend `spent` is (its start, epoch ms); NaN: not read yet
    let period = Number.NaN
    const loading = yield* Effect.makeSemaphore(1)

    const sum = (values: Iterable<number>) => {
      let total = 0
      for (const v of values) total += v
      return total
    }
    const held = () => sum(Array.from(holders.values(), (h) => h.held))
    const committed = () => spent + lost + held() + sum(reservations.values())

    /** The agent's budget, with `spent` that of the current period. */
    const budgetNow = Effect.gen(function*() {
      const agent = yield* repo.findById(agentId)
      if (agent === undefined || agent.budget === null) return undefined
      const budget: Budget = agent.budget
      yield* loading.withPermits(1)(Effect.suspend(() => {
        const start = periodStart(budget.period).getTime()
        if (start === period) return Effect.void
        return Effect.map(repo.spent(agentId, budget), (s) => {
          spent = s
          lost = 0
          period = start
        })
      }))
      return budget
    })

    /**
     * Spend reported: kept here and added to the agent's record. A record that fails (after two more tries) is
     * logged and dropped, not a defect: a defect restarts the entity, which is handed the same report again,
     * and it failed the same way every 10 s while every lease request of the agent waited behind it. The
     * spend still counts here. (The record saturates rather than overflow: AgentRepo.addSpend.)
     */
    const record = (budget: Budget, usd: number) => {
      if (!(usd > 0)) return Effect.void
      if (!Number.isFinite(usd)) {
        return Effect.logError("a holder reported a spend that is no amount; it is ignored").pipe(
          Effect.annotateLogs({ agent_id: agentId, spent_usd: String(usd) })
        )
      }
      spent += usd
      return repo.addSpend(agentId, budget, usd).pipe(
        Effect.sandbox,
        Effect.retry({ times: 2, schedule: Schedule.spaced("200 millis") }),
        Effect.catchAll((cause) =>
          Effect.logError("the agent's spend could not be recorded: dropped from its record", cause).pipe(
            Effect.annotateLogs({ agent_id: agentId, spent_usd: usd })
          )
        )
      )
    }

    /**
     * A request for `min` refused. Only when what is spent leaves no room for it is the agent marked
     * exhausted (new invocations get 402 until a PATCH or the next period): spend only grows in a period. Short
     * only of what leases and reservations hold now, which comes back as their calls end, the request alone is
     * refused, and its node waits and asks again (BudgetLeases).
     */
    const refuse = (budget: Budget, min: number) => {
      const used = spent + lost
      const refusal = new BudgetExhausted({
        limit_usd: budget.limit_usd,
        spent_usd: used,
        reserved_usd: held() + sum(reservations.values())
      })
      return budget.limit_usd - used < min ? Effect.zipRight(repo.markExhausted(agentId, budget), refusal) : refusal
    }

    return {
      Lease: ({ payload }) =>
        Effect.gen(function*() {
          const budget = yield* budgetNow
          // no budget (any more): nothing to share out
          if (budget === undefined) return { granted_usd: payload.want_usd }
          yield* record(budget, payload.spent_usd)
          const now = Date.now()
          for (const [holder, entry] of holders) {
            if (holder !== payload.holder && now - entry.at > HOLDER_TTL_MS) {
              lost += entry.held
              holders.delete(holder)
            }
          }
          const mine = { held: Math.max(0, payload.held_usd), at: now }
          holders.set(payload.holder, mine)
          if (!(payload.want_usd > 0)) {
            // a budget lowered below what is spent and held: a report is told to hand back (a negative grant) as
            // much of the excess as it holds, so that leases granted under the old cap are not spent past the new
            // one. It gives back what its calls have not reserved, and says what it holds with its next report.
            const over = committed() - budget.limit_usd
            return { granted_usd: over > 0 ? -Math.min(over, mine.held) : 0 }
          }
          const deadline = now + WAIT_MS
          while (true) {
            const free = budget.limit_usd - committed()
            if (free >= payload.min_usd) {
              // half of what is free at most: near the cap, one node does not take it all
              const granted = Math.min(payload.want_usd, Math.max(payload.min_usd, free / 2))
              mine.held += granted
              return { granted_usd: granted }
            }
            // other nodes may hold some unused: it comes back when they stop using it
            if (held() - mine.held <= 0 || Date.now() >= deadline) break
            yield* Effect.sleep("50 millis")
          }
          return yield* refuse(budget, payload.min_usd)
        }),
      Reserve: ({ payload }) =>
        Effect.gen(function*() {
          const budget = yield* budgetNow
          if (budget === undefined) return
          if (committed() + payload.estimate_usd > budget.limit_usd) return yield* refuse(budget, payload.estimate_usd)
          reservations.set(payload.reservation, payload.estimate_usd)
        }),
      Settle: ({ payload }) =>
        Effect.gen(function*() {
          reservations.delete(payload.reservation)
          const budget = yield* budgetNow
          if (budget !== undefined) yield* record(budget, payload.actual_usd)
        }),
      Forget: () => Effect.sync(() => reservations.clear())
    }
  }),
  // a lease request may wait for budget to come back, while the reports that bring it back go on
  { concurrency: "unbounded" }
)
