import { PgClient } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Schedule, Stream } from "effect"
import type { TaskId } from "../../schema/Ids.js"

export const TASK_DONE_CHANNEL = "switchyard_task_done"

/**
 * Tells waiting readers when a task ends, on whatever node it ran: the ending statement notifies
 * TASK_DONE_CHANNEL (PostgreSQL LISTEN/NOTIFY) and every node wakes its waiters for that task.
 */
export class TaskCompletions extends Effect.Service<TaskCompletions>()("tasks/TaskCompletions", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const waiters = new Map<string, Set<Deferred.Deferred<void>>>()
    yield* sql.listen(TASK_DONE_CHANNEL).pipe(
      Stream.runForEach((id) =>
        Effect.forEach(waiters.get(id) ?? [], (d) => Deferred.succeed(d, undefined), { discard: true })
      ),
      // a lost listening connection (database restart) is opened again
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    /** Runs `check` until it reports the task ended or `timeout` passes, waking on notifications. */
    const waitFor = <A>(
      id: TaskId,
      timeout: Duration.DurationInput,
      check: Effect.Effect<{ done: boolean; value: A }, unknown>
    ) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<void>()
        const set = waiters.get(id) ?? new Set()
        set.add(done)
        waiters.set(id, set)
        const forget = Effect.sync(() => {
          set.delete(done)
          if (set.size === 0) waiters.delete(id)
        })
        return yield* Effect.gen(function*() {
          const first = yield* check
          if (first.done) return first.value
          // the notification, or a slow re-check in case one was missed while the listener reconnected
          yield* Deferred.await(done).pipe(Effect.timeout(timeout), Effect.ignore)
          return (yield* check).value
        }).pipe(Effect.ensuring(forget))
      })

    return { waitFor } as const
  })
}) {}
