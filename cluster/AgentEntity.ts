import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"

export class BudgetExhausted extends Schema.TaggedError<BudgetExhausted>()("BudgetExhausted", {
  limit_usd: Schema.Number,
  spent_usd: Schema.Number,
  reserved_usd: Schema.Number
}) {}

/**
 * One entity per agent: its budget is shared out here, so tasks of one agent on any number of nodes can
 * never together spend past its cap. A model call reserves its worst-case cost first, then settles the
 * actual cost.
 *
 * Nodes reserve from a lease (`Lease`): a share of the budget the entity hands a node, which the node's
 * model calls then reserve from and settle into locally (src/agents/BudgetLeases.ts). Each request
 * reports what the node holds now (`held_usd`: its lease not yet spent, in calls or idle) and what it
 * spent since its last report (`spent_usd`, recorded here), and asks for `want_usd` more (0: a report
 * only), at least `min_usd`. The entity grants only from what no lease holds: spent + held by all never
 * passes the cap. A message per call to the one node holding an agent made that node every call's
 * stop, and the agent's ceiling that of one node (issue 20).
 *
 * `Reserve` and `Settle` are the per-call form, for nodes of an earlier release during a rolling upgrade.
 */
export const AgentEntity = Entity.make("Agent", [
  Rpc.make("Lease", {
    payload: {
      holder: Schema.String,
      held_usd: Schema.Number,
      spent_usd: Schema.Number,
      want_usd: Schema.Number,
      min_usd: Schema.Number
    },
    success: Schema.Struct({ granted_usd: Schema.Number }),
    error: BudgetExhausted
  }),
  Rpc.make("Reserve", {
    payload: { reservation: Schema.String, estimate_usd: Schema.Number },
    error: BudgetExhausted
  }),
  Rpc.make("Settle", {
    payload: { reservation: Schema.String, actual_usd: Schema.Number }
  }),
  Rpc.make("Forget")
])
