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

const limitDescription = (plural: string, every: string) =>
  `${plural} per page, 1–200, oldest first; without it (and \`cursor\`), ${every} at once. With \`cursor\` alone, 50.`
const cursorParam = Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })

/**
 * `limit` and `cursor` of a list that answers every item when given neither (as it did before it paged), e.g.
 * `optionalPage("Agents", "every agent")`.
 */
export const optionalPage = (plural: string, every: string) => ({
  limit: Schema.optional(IntegerParam(1, 200)).annotations({ description: limitDescription(plural, every) }),
  cursor: cursorParam
})

/** The same for an MCP tool, whose arguments are JSON. */
export const optionalPageInput = (plural: string, every: string) => ({
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))).annotations({
    description: limitDescription(plural, every)
  }),
  cursor: cursorParam
})

/** `next_cursor` of a list that `optionalPage` pages. */
export const nextCursor = Schema.NullOr(Schema.String).annotations({
  description: "Pass as `cursor` for the next page; null on the last page and without `limit`."
})

/**
 * The answer of a list that `optionalPage` pages: its items, `total` counting every page, and `next_cursor`
 * (`things` names the items in the description of `total`).
 */
export const PagedList = <S extends Schema.Schema.Any>(
  item: S,
  identifier: string,
  things: string,
  order?: string
) =>
  Schema.Struct({
    items: order === undefined ? Schema.Array(item) : Schema.Array(item).annotations({ description: order }),
    total: Schema.Int.annotations({ description: `How many ${things} the list has, on all its pages.` }),
    next_cursor: nextCursor
  }).annotations({ identifier })
