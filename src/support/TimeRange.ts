import { Effect } from "effect"
import { BadRequest } from "../../schema/Errors.js"

/**
 * A range that ends before it starts (or where it starts) is a mistake to say, not an empty answer. `names`: the
 * parameters as the caller sent them.
 */
export const rangeForwards = (
  from: Date | undefined,
  to: Date | undefined,
  names: readonly [string, string] = ["from", "to"]
) =>
  from !== undefined && to !== undefined && from.getTime() >= to.getTime()
    ? Effect.fail(BadRequest.of(`\`${names[0]}\` must be before \`${names[1]}\`.`, undefined, "invalid_time_range"))
    : Effect.void
