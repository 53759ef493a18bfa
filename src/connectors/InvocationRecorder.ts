import { SqlClient } from "@effect/sql"
import { Chunk, Effect, Queue, Schedule } from "effect"

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

const BATCH = 500

/**
 * Records each connector call (who, which connection and operation, status, duration, bytes; never the
 * payloads) off the request path: calls enqueue, a background fiber writes batches.
 */
export class InvocationRecorder extends Effect.Service<InvocationRecorder>()("connectors/InvocationRecorder", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queue = yield* Queue.sliding<Invocation>(50_000)

    const write = (batch: ReadonlyArray<Invocation>) =>
      batch.length === 0 ? Effect.void : sql`INSERT INTO connector_invocations ${sql.insert(batch as any)}`.pipe(
        Effect.retry(Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(5)))),
        Effect.catchAllCause((cause) => Effect.logWarning(`lost ${batch.length} invocation records`, cause))
      )

    // wait for the first record, then gather for a moment: one INSERT per window, not per call
    const flush = Queue.take(queue).pipe(
      Effect.zipLeft(Effect.sleep("200 millis")),
      Effect.flatMap((first) =>
        Effect.map(Queue.takeUpTo(queue, BATCH - 1), (rest) => [first, ...Chunk.toReadonlyArray(rest)])
      ),
      Effect.flatMap(write)
    )
    yield* flush.pipe(Effect.forever, Effect.forkScoped)
    // on shutdown, write what is still queued
    yield* Effect.addFinalizer(() => Queue.takeAll(queue).pipe(Effect.flatMap((c) => write(Chunk.toReadonlyArray(c)))))

    return {
      record: (invocation: Invocation) => Effect.sync(() => queue.unsafeOffer(invocation)),
      recordNow: (invocation: Invocation) => void queue.unsafeOffer(invocation)
    } as const
  })
}) {}
