import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect } from "effect"
import type * as Pg from "pg"

/** The node's `pg` pool, the one PgClient runs on: for statements on hot paths (see `prepared`). */
export class PgPool extends Context.Tag("db/PgPool")<PgPool, Pg.Pool>() {}

export interface Prepared<R> {
  /** For plain-Node callers (the fast paths). */
  readonly run: (values: ReadonlyArray<unknown>) => Promise<Array<R>>
  /** The same statement for Effect code, failing with SqlError like PgClient's statements. */
  readonly effect: (values: ReadonlyArray<unknown>) => Effect.Effect<Array<R>, SqlError>
}

/**
 * A named statement: PostgreSQL parses it once per connection and can reuse its plan, and it skips the
 * statement compiler and span of PgClient. For the few statements every task runs; planning them each
 * time cost more than executing them. `text` is fixed: whatever varies goes in `values`.
 */
export const prepared = <R>(pool: Pg.Pool, name: string, text: string): Prepared<R> => {
  const run = (values: ReadonlyArray<unknown>) =>
    pool.query({ name, text, values: values as Array<unknown> }).then((result) => result.rows as Array<R>)
  return {
    run,
    effect: (values) =>
      Effect.async<Array<R>, SqlError>((resume) => {
        run(values).then(
          (rows) => resume(Effect.succeed(rows)),
          (cause) => resume(Effect.fail(new SqlError({ cause, message: "Failed to execute statement" })))
        )
      })
  }
}
