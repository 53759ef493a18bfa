import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect } from "effect"
import type * as Pg from "pg"

/** The node's `pg` pool, the one PgClient runs on: for statements on hot paths (see `prepared`). */
export class PgPool extends Context.Tag("db/PgPool")<PgPool, Pg.Pool>() {}

/**
 * A named statement: PostgreSQL parses it once per connection and can reuse its plan, and it skips the
 * statement compiler and span of PgClient. For the few statements every task runs; planning them each
 * time cost more than executing them. `text` is fixed: whatever varies goes in the values. It fails with
 * SqlError like PgClient's statements.
 */
export const prepared =
  <R>(pool: Pg.Pool, name: string, text: string) =>
  (values: ReadonlyArray<unknown>): Effect.Effect<Array<R>, SqlError> =>
    Effect.async<Array<R>, SqlError>((resume) => {
      pool.query({ name, text, values: values as Array<unknown> }).then(
        (result) => resume(Effect.succeed(result.rows as Array<R>)),
        (cause) => resume(Effect.fail(new SqlError({ cause, message: "Failed to execute statement" })))
      )
    })
