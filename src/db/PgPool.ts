import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect } from "effect"
import { constVoid } from "effect/Function"
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

/** Calls per execution of a `batched` statement, at most. */
const BATCH_MAX = 64

/**
 * The items of a `batched` statement as rows: `i` and the given columns (`name type, …`). The range
 * condition on `i` always holds; it is there for the planner, which has no statistics for a function's
 * rows and estimates 100 of them, and so would join them to a table by scanning the table whole (a hash
 * join). A range it estimates to hold for 0.5% of rows: one row, joined by index lookups, as the
 * statement for one task would be. The plan is kept (a prepared statement), so it must suit a table of
 * any size.
 */
export const batchItems = (columns: string) =>
  `SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(i int, ${columns}) WHERE r.i BETWEEN 0 AND ${BATCH_MAX - 1}`

interface BatchedCall<I, R> {
  readonly item: I
  readonly resume: (result: Effect.Effect<R | undefined, SqlError>) => void
}

const sqlError = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

/**
 * Group commit for a statement that many tasks run at once (`batchItems` reads its items). A call runs
 * at the end of the event loop's turn while fewer than `concurrency` (default 1) executions of the
 * statement are in flight, so a lone caller waits for next to nothing, and the calls of one turn go
 * together; past that, calls wait, then go together in the next execution: one round
 * trip, one plan and one commit for all of them, which costs PostgreSQL and this process a third of what
 * as many statements do. The busier the node, the larger the batches. `text` takes the calls as $1, a
 * JSON array of the items, each with its position `i` added, and returns rows that carry that `i` (an
 * item with no row gets undefined). Items whose `apart` keys are equal are never in flight together. A
 * failed execution runs its items again one by one, so a bad item fails only its own call. A call
 * interrupted before its execution began is withdrawn.
 */
export const batched = <I extends object, R extends { readonly i: number }>(
  pool: Pg.Pool,
  name: string,
  text: string,
  options: {
    readonly concurrency?: number
    readonly apart?: (item: I) => string | undefined
  } = {}
) => {
  const concurrency = options.concurrency ?? 1
  let queue: Array<BatchedCall<I, R>> = []
  let running = 0

  /**
   * Runs the calls in one statement; `settled` runs once, when the statement's slot is free again. On
   * success that is before the callers are resumed: what they go on to do (replies, task runs) takes the
   * main thread for a while, and the next execution should not wait for it.
   */
  const execute = (calls: ReadonlyArray<BatchedCall<I, R>>, settled: () => void): Promise<void> =>
    // inside a promise: an item that cannot be serialized is that execution's failure, not a stuck batcher
    new Promise<Pg.QueryResult<R>>((resolve) =>
      resolve(pool.query<R>({ name, text, values: [JSON.stringify(calls.map((c, i) => ({ ...c.item, i })))] }))
    ).then(
      ({ rows }) => {
        const byIndex = new Array<R | undefined>(calls.length)
        for (const row of rows) byIndex[row.i] = row
        try {
          settled()
        } finally {
          calls.forEach((c, i) => c.resume(Effect.succeed(byIndex[i])))
        }
      },
      (cause) =>
        (calls.length === 1
          ? Promise.resolve(calls[0]!.resume(Effect.fail(sqlError(cause))))
          // one by one, still in this slot: items kept apart stay apart
          : Promise.all(calls.map((c) => execute([c], constVoid)))).finally(settled).then(constVoid)
    )

  // the `apart` keys of the items in flight
  const busy = new Set<string>()

  const flush = () => {
    if (running >= concurrency || queue.length === 0) return
    const taken: Array<BatchedCall<I, R>> = []
    const rest: Array<BatchedCall<I, R>> = []
    const keys: Array<string> = []
    for (const call of queue) {
      const key = options.apart?.(call.item)
      if (taken.length >= BATCH_MAX || (key !== undefined && busy.has(key))) {
        rest.push(call)
        continue
      }
      if (key !== undefined) {
        busy.add(key)
        keys.push(key)
      }
      taken.push(call)
    }
    queue = rest
    if (taken.length === 0) return
    running++
    void execute(taken, () => {
      running--
      for (const key of keys) busy.delete(key)
      flush()
    })
  }

  // a new call waits for the end of this turn of the event loop: the calls made in one turn (the requests
  // read together, the runs one result resumed) go in one execution instead of the first alone
  let scheduled = false
  const flushSoon = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(() => {
      scheduled = false
      flush()
    })
  }

  return (item: I): Effect.Effect<R | undefined, SqlError> =>
    Effect.async<R | undefined, SqlError>((resume) => {
      const call: BatchedCall<I, R> = { item, resume }
      queue.push(call)
      flushSoon()
      return Effect.sync(() => {
        const at = queue.indexOf(call)
        if (at >= 0) queue.splice(at, 1)
      })
    })
}
