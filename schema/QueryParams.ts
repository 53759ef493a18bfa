import { Schema } from "effect"

/**
 * Query parameters arrive as strings; these decode them as the server always has, and document them as the
 * values they stand for (an integer, a number, a boolean), so generated clients take `limit: 50` and
 * `asynchronous: true` instead of strings.
 */

/** An integer in `[min, max]`, sent as its decimal string. */
export const IntegerParam = (min: number, max: number) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.between(min, max)).annotations({
    jsonSchema: { type: "integer", minimum: min, maximum: max }
  })

/** A number in `[min, max]`, sent as its decimal string. */
export const NumberParam = (min: number, max: number) =>
  Schema.NumberFromString.pipe(Schema.between(min, max)).annotations({
    jsonSchema: { type: "number", minimum: min, maximum: max }
  })

/**
 * A flag: `true` or `false`. Decoded as the string the handler compares with `"true"` (anything else is
 * false), as the endpoints have always read it.
 */
export const FlagParam = Schema.String.annotations({ jsonSchema: { type: "boolean" } })

/** A flag that admits only `true` and `false`. */
export const StrictFlagParam = Schema.Literal("true", "false").annotations({ jsonSchema: { type: "boolean" } })
