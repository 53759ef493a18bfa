import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"

export class BudgetExhausted extends Schema.TaggedError<BudgetExhausted>()("BudgetExhausted", {
  limit_usd: Schema.Number,
  spent_usd: Schema.Number,
  reserved_usd: Schema.Number
}) {}

/**
 * One entity per agent: budget reservations are serialized here, so concurrent tasks of one agent can
 * never together spend past its cap. A model call reserves its worst-case cost first, then settles the
 * actual cost.
 */
export const AgentEntity = Entity.make("Agent", [
  Rpc.make("Reserve", {
    payload: { reservation: Schema.String, estimate_usd: Schema.Number },
    error: BudgetExhausted
  }),
  Rpc.make("Settle", {
    payload: { reservation: Schema.String, actual_usd: Schema.Number }
  }),
  Rpc.make("Forget")
])
