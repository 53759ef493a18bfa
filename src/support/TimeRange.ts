import { Effect } from "effect"
import { BadRequest } from "../../schema/Errors.js"

/** A range that ends before it starts (or where it starts) is a mistake to say, not an empty answer. */
export const rangeForwards = (from: Date | undefined, to: Date | undefined) =>
  from !== undefined && to !== undefined && from.getTime() >= to.getTime()
    ? Effect.fail(BadRequest.of("`from` must be before `to`.", undefined, "invalid_time_range"))
    : Effect.void
