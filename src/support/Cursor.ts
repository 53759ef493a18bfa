import { Effect } from "effect"
import { BadRequest } from "../../schema/Errors.js"

/** A keyset position: the sort time and id of the last item of a page. */
export interface Position {
  readonly at: Date
  readonly id: string
}

const decode = (cursor: string): Position | undefined => {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    const date = new Date(at)
    return Number.isNaN(date.getTime()) || typeof id !== "string" ? undefined : { at: date, id }
  } catch {
    return undefined
  }
}

/** The position a `cursor` query parameter names; a cursor this API did not hand out is a 400. */
export const positionOf = (cursor: string | undefined) =>
  cursor === undefined
    ? Effect.succeed(undefined)
    : Effect.fromNullable(decode(cursor)).pipe(
      Effect.mapError(() =>
        BadRequest.of("`cursor` is not one this API returned; start again without it.", undefined, "invalid_cursor")
      )
    )

/**
 * One page from `limit + 1` rows read after the position: the items, and the cursor of the next page
 * when there is one.
 */
export const pageOf = <R extends { readonly id: string }, A>(
  rows: ReadonlyArray<R>,
  limit: number,
  at: (row: R) => Date,
  item: (row: R) => A
) => {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    items: page.map(item),
    next_cursor: rows.length > limit && last !== undefined
      ? Buffer.from(JSON.stringify([at(last).toISOString(), last.id])).toString("base64url")
      : null
  }
}
