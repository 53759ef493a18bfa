import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The times the newest-first lists page by (tasks, approvals, skills, webhook deliveries) are kept to the
 * millisecond, as a cursor holds them (src/support/Cursor.ts): a row written with microseconds after the last
 * row of a page, in the same millisecond, compared greater than the cursor's time, and the next page skipped
 * it (tasks inserted together share one time, so a page of tasks lost some). New rows get milliseconds by
 * default; the rows written before are cut to them, with their tables' event triggers off (a row's time being
 * cut is no event).
 */
const COLUMNS: ReadonlyArray<readonly [table: string, column: string]> = [
  ["tasks", "created_at"],
  ["approvals", "requested_at"],
  ["skills", "created_at"],
  ["webhook_deliveries", "created_at"]
]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const [table, column] of COLUMNS) {
    yield* sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN ${column} SET DEFAULT date_trunc('milliseconds', now())`)
    yield* sql.unsafe(`ALTER TABLE ${table} DISABLE TRIGGER USER`)
    yield* sql.unsafe(
      `UPDATE ${table} SET ${column} = date_trunc('milliseconds', ${column}) ` +
        `WHERE ${column} <> date_trunc('milliseconds', ${column})`
    )
    yield* sql.unsafe(`ALTER TABLE ${table} ENABLE TRIGGER USER`)
  }
})
