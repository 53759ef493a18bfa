import { SqlClient } from "@effect/sql"
import { Effect, Fiber, Runtime, Schedule } from "effect"

export interface Invocation {
  readonly organization_id: string
  readonly connector_id: string
  readonly connection_id: string
  readonly operation_id: string
  readonly api_key_id: string | null
  readonly user_id: string | null
  readonly task_id: string | null
  readonly status: number | null
  readonly error_code: string | null
  readonly duration_ms: number
  readonly request_bytes: number
  readonly response_bytes: number | null
}

/** Rows per INSERT (12 parameters each, well under PostgreSQL's 65535). */
const BATCH = 500
/** How long a record waits for others to share its INSERT. */
export const RECORD_WINDOW_MS = 200

/**
 * Records each connector call (who, which connection and operation, status, duration, bytes; never the
 * payloads) off the request path: `record` only appends to an array, and one INSERT per window (or per BATCH
 * records) writes them; a failed INSERT is retried for about 6 s.
 *
 * What can be lost, and why: the records of calls answered in the last RECORD_WINDOW_MS before the process is
 * killed (SIGKILL, a crash, the machine going down), with any INSERT not yet committed then; and a batch the
 * database refused for longer than the retries (logged with its count). A graceful stop (SIGTERM) writes
 * everything first. Writing each record before answering would put a database commit, and its PostgreSQL CPU,
 * on every call's path.
 */
export class InvocationRecorder extends Effect.Service<InvocationRecorder>()("connectors/InvocationRecorder", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    let pending: Array<Invocation> = []
    let timer: ReturnType<typeof setTimeout> | undefined
    const writing = new Set<Fiber.RuntimeFiber<void>>()

    const write = (batch: ReadonlyArray<Invocation>) =>
      sql`INSERT INTO connector_invocations ${sql.insert(batch as any)}`.pipe(
        Effect.retry(Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(5)))),
        Effect.catchAllCause((cause) => Effect.logWarning(`lost ${batch.length} invocation records`, cause)),
        Effect.asVoid,
        // not traced: the write belongs to no request, and its span carried the statement's text, one
        // placeholder list per row (~30 KB for a batch of 500), into every export
        Effect.withTracerEnabled(false)
      )

    const flush = () => {
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
      const batch = pending
      pending = []
      if (batch.length === 0) return
      const fiber = runFork(write(batch))
      writing.add(fiber)
      fiber.addObserver(() => writing.delete(fiber))
    }

    // on shutdown: write what is waiting, and let the INSERTs under way finish
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        flush()
        return Fiber.awaitAll([...writing])
      })
    )

    /** Takes one call's record; it reaches the database within RECORD_WINDOW_MS. */
    const recordNow = (invocation: Invocation) => {
      if (pending.push(invocation) >= BATCH) flush()
      else if (timer === undefined) timer = setTimeout(flush, RECORD_WINDOW_MS)
    }

    return { recordNow, record: (invocation: Invocation) => Effect.sync(() => recordNow(invocation)) } as const
  })
}) {}
