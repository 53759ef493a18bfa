import type { PgClient } from "@effect/sql-pg"
import type { PageRequest } from "../support/Cursor.js"

/**
 * The keyset clauses of a list oldest first by `(created_at, id)` of `alias`, for `pageOf`: the condition after
 * the position (to follow a WHERE), the order, and the `limit + 1` rows; without a page, all rows in that order.
 * Ordered by the creation time in milliseconds, as the cursor holds it (a row written with microseconds is
 * neither repeated nor skipped). `id` names another id column; `textId`, one that is not a UUID.
 */
export const keyset = (
  sql: PgClient.PgClient,
  alias: string,
  page: PageRequest | undefined,
  options: { readonly id?: string; readonly textId?: boolean } = {}
) => {
  const at = sql.literal(`date_trunc('milliseconds', ${alias}.created_at)`)
  const id = sql.literal(`${alias}.${options.id ?? "id"}`)
  const afterId = page?.after === undefined
    ? sql``
    : options.textId
    ? sql`${page.after.id}`
    : sql`${page.after.id}::uuid`
  return {
    after: page?.after === undefined ? sql`` : sql`AND (${at}, ${id}) > (${page.after.at}, ${afterId})`,
    order: sql`ORDER BY ${at}, ${id}`,
    limit: page === undefined ? sql`` : sql`LIMIT ${page.limit + 1}`
  }
}
