import { Effect } from "effect"
import { BadRequest } from "../../schema/Errors.js"
import { isUuid } from "./Uuid.js"

/** A keyset position: the sort time and id of the last item of a page. */
export interface Position {
  readonly at: Date
  readonly id: string
}

/** The latest time a cursor can hold: 9999-12-31, which PostgreSQL stores and JSON writes as four digits. */
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/**
 * Only what `pageOf` writes: an ISO time PostgreSQL can compare and an id of the listed kind (a UUID unless
 * the list says otherwise); anything else is no position.
 */
const decode = (cursor: string, isId: (id: string) => boolean): Position | undefined => {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    const date = new Date(at)
    const t = date.getTime()
    return typeof at === "string" && t >= 0 && t <= LATEST && date.toISOString() === at &&
        typeof id === "string" && isId(id)
      ? { at: date, id }
      : undefined
  } catch {
    return undefined
  }
}

/** The position a `cursor` query parameter names; a cursor this API did not hand out is a 400. */
export const positionOf = (cursor: string | undefined, isId: (id: string) => boolean = isUuid) =>
  cursor === undefined
    ? Effect.succeed(undefined)
    : Effect.fromNullable(decode(cursor, isId)).pipe(
      Effect.mapError(() =>
        BadRequest.of("`cursor` is not one this API returned; start again without it.", undefined, "invalid_cursor")
      )
    )

/** The cursor of a position: what `positionOf` reads back. */
export const cursorOf = (position: Position) =>
  Buffer.from(JSON.stringify([position.at.toISOString(), position.id])).toString("base64url")

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
    next_cursor: rows.length > limit && last !== undefined ? cursorOf({ at: at(last), id: last.id }) : null
  }
}

/** A page to read: `limit` rows after the position (from the start without one). */
export interface PageRequest {
  readonly after: Position | undefined
  readonly limit: number
}

/** The optional `limit` and `cursor` of a list that pages only when asked. */
export interface PageParams {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/**
 * A list that pages only when asked: with neither `limit` nor `cursor`, every row (`read(undefined)`) and no
 * cursor, as such lists answered before they paged; else a page after the cursor (`limit`, 50 by default),
 * oldest first by `(created_at, id)`. `total` counts the rows on all pages.
 */
export const listOrPage = <R extends { readonly id: string; readonly created_at: Date }, E, Q>(
  params: PageParams,
  read: (page: PageRequest | undefined) => Effect.Effect<ReadonlyArray<R>, E, Q>,
  count: Effect.Effect<number, E, Q>,
  isId: (id: string) => boolean = isUuid
) =>
  params.limit === undefined && params.cursor === undefined
    ? Effect.map(read(undefined), (rows) => ({ rows, total: rows.length, next_cursor: null as string | null }))
    : Effect.gen(function*() {
      const after = yield* positionOf(params.cursor, isId)
      const limit = params.limit ?? 50
      const [rows, total] = yield* Effect.all([read({ after, limit }), count], { concurrency: 2 })
      const page = pageOf(rows, limit, (r) => r.created_at, (r) => r)
      return { rows: page.items, total, next_cursor: page.next_cursor }
    })
