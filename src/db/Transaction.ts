import type { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

const isSqlError = (e: unknown): e is SqlError => e instanceof SqlError

/**
 * `self` in one transaction (or in the one already open). A failure to begin or commit is a defect, like every
 * storage error past a repository: logged, answered 503 `database_unavailable` when the database is out of
 * reach and 500 otherwise, never an error a caller handles. Any failure of `self` rolls the transaction back.
 */
export const transactionIn =
  (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    sql.withTransaction(self).pipe(Effect.catchIf(isSqlError, Effect.die))
