import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Schedule, Stream } from "effect"
import * as Crypto from "node:crypto"
import type { TaskOutcome } from "../../cluster/TaskEntity.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import { PgPool } from "../db/PgPool.js"
import type { TaskSummary } from "./TaskRepo.js"

type Outcome = typeof TaskOutcome.Type

/** A waiter: woken with the outcome when this node ended the task, with nothing when it must look again. */
type Wake = (ended: Outcome | undefined) => void

export interface Watch {
  /**
   * Waits until the task ends or `timeout` passes: the outcome when this node ended it, otherwise
   * undefined (read the task again). It returns at once when the end came before the call; each end is
   * reported once.
   */
  readonly next: (timeout: Duration.DurationInput) => Effect.Effect<Outcome | undefined>
}

/** A task this node runs, as its readers see it, with whose it is. */
export type KnownTask = TaskSummary & { readonly organization_id: OrganizationId }

/** How long, and for how many tasks at most, this node remembers the tasks it runs. */
const KNOWN_TTL_MS = 30_000
const KNOWN_MAX = 50_000

/** How often a waiter reads its task again, should its end have gone unannounced (its shard moved away). */
export const RECHECK_MS = 5_000

/** A notification's payload must stay under 8000 bytes; a longer result is left out (its reader reads it). */
const PAYLOAD_MAX = 7000

/**
 * An end as a node's wake-up channel carries it: id, status, finished at (ISO), result, error code (absent from
 * a node of an earlier release); or only the id (read it).
 */
type Announced =
  | readonly [string, string, string | null, string | null, (string | null)?]
  | readonly [string]

/**
 * Tells waiting readers when a task ends. The node that ends a task hands its own waiters the outcome at
 * once (`ended`), so they need not read the task again. A reader on another node registers this node's
 * wake-up channel (`channel`, a PostgreSQL LISTEN channel of its own) with the task (TaskRepo.watch); the
 * ending statement returns the channels registered, and the node that ended the task notifies those, with
 * the outcome, after the commit (coalesced: one statement for the ends of a while). So an end costs work
 * on the nodes where someone waits for it, not on every node: a NOTIFY of every end to every node cost
 * each of N nodes the work of every task in the cluster (issue 20). A notification lost (a node that died
 * right after the commit, a listener reconnecting) costs a waiter the periodic re-read of `Watch.next`'s
 * caller, not the answer.
 *
 * It also remembers the tasks invoked and run on this node for a while (`track`, `known`), kept current by
 * the ends this node makes: a reader of such a task is answered without reading it.
 */
export class TaskCompletions extends Effect.Service<TaskCompletions>()("tasks/TaskCompletions", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const pool = yield* PgPool
    const waiters = new Map<string, Set<Wake>>()
    const wake = (id: string, ended: Outcome | undefined) => {
      for (const w of waiters.get(id) ?? []) w(ended)
    }
    const tracked = new Map<string, { task: KnownTask; readonly at: number }>()

    /** This node's wake-up channel: new with each start (a dead node's channel is heard by nobody). */
    const channel = `switchyard_wake_${Crypto.randomBytes(8).toString("hex")}`
    yield* sql.listen(channel).pipe(
      Stream.runForEach((payload) =>
        Effect.sync(() => {
          for (const end of JSON.parse(payload) as Array<Announced>) {
            tracked.delete(end[0])
            wake(
              end[0],
              end.length === 1 ? undefined : {
                status: end[1] as Outcome["status"],
                result: end[3],
                error_code: (end[4] ?? null) as Outcome["error_code"],
                finished_at: end[2] === null ? null : new Date(end[2])
              }
            )
          }
        })
      ),
      // a lost listening connection (database restart) is opened again
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    /**
     * Watches the task while `f` runs: an end after the watch began is never missed, so `f` can read the
     * task first and then wait. A timer and a callback per wait, no fiber: long polls are frequent.
     */
    const watch = <A, E, R>(id: TaskId, f: (watch: Watch) => Effect.Effect<A, E, R>) =>
      Effect.suspend(() => {
        let woken: { ended: Outcome | undefined } | undefined
        let resume: (() => void) | undefined
        const self: Wake = (ended) => {
          woken ??= { ended }
          resume?.()
        }
        const set = waiters.get(id) ?? new Set()
        set.add(self)
        waiters.set(id, set)
        const next = (timeout: Duration.DurationInput) =>
          Effect.async<Outcome | undefined>((done) => {
            const report = () => {
              resume = undefined
              const ended = woken?.ended
              woken = undefined
              done(Effect.succeed(ended))
            }
            if (woken !== undefined) return report()
            const timer = setTimeout(report, Duration.toMillis(timeout))
            resume = () => {
              clearTimeout(timer)
              report()
            }
            return Effect.sync(() => {
              resume = undefined
              clearTimeout(timer)
            })
          })
        return f({ next }).pipe(Effect.ensuring(Effect.sync(() => {
          set.delete(self)
          if (set.size === 0) waiters.delete(id)
        })))
      })

    /**
     * Calls `f` once: with the outcome when this node ends the task, with nothing when another node's end
     * of it is announced or `ms` pass. No fiber, for the fast path's long polls; the result cancels it.
     */
    const onEnd = (id: TaskId, ms: number, f: (ended: Outcome | undefined) => void) => {
      const set = waiters.get(id) ?? new Set()
      const cancel = () => {
        clearTimeout(timer)
        set.delete(self)
        if (set.size === 0) waiters.delete(id)
      }
      const self: Wake = (ended) => {
        cancel()
        f(ended)
      }
      const timer = setTimeout(self, ms, undefined)
      set.add(self)
      waiters.set(id, set)
      return cancel
    }

    /** A task invoked here that runs here, as inserted. */
    const track = (task: KnownTask) => {
      const now = Date.now()
      // the Map iterates oldest first
      for (const [id, entry] of tracked) {
        if (now - entry.at < KNOWN_TTL_MS && tracked.size < KNOWN_MAX) break
        tracked.delete(id)
      }
      tracked.set(task.id, { task, at: now })
    }

    /** The task as this node last knew it, if it runs (or ran) here: current once it ended here. */
    const known = (id: TaskId): KnownTask | undefined => tracked.get(id)?.task

    // ends to announce, by channel; sent by one statement at a time
    const unannounced = new Map<string, Array<Announced>>()
    let announcing = false
    const announce = () => {
      announcing = true
      const channels: Array<string> = []
      const payloads: Array<string> = []
      for (const [to, ends] of unannounced) {
        let batch: Array<Announced> = []
        let size = 2
        for (const end of ends) {
          const length = Buffer.byteLength(JSON.stringify(end)) + 1
          if (size + length > PAYLOAD_MAX && batch.length > 0) {
            channels.push(to)
            payloads.push(JSON.stringify(batch))
            batch = []
            size = 2
          }
          batch.push(end)
          size += length
        }
        channels.push(to)
        payloads.push(JSON.stringify(batch))
      }
      unannounced.clear()
      pool.query({
        name: "task_wake_notify",
        text: "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS x(c, p)",
        values: [channels, payloads]
      })
        .catch(() => undefined)
        .finally(() => (unannounced.size > 0 ? announce() : (announcing = false)))
    }

    /**
     * This node ended the task (committed): its waiters get the outcome at once, and the nodes in
     * `waitedOn` (the channels the ending statement returned) by notification.
     */
    const ended = (id: TaskId, outcome: Outcome, waitedOn?: ReadonlyArray<string> | null) => {
      const entry = tracked.get(id)
      if (entry !== undefined) entry.task = { ...entry.task, ...outcome }
      wake(id, outcome)
      if (waitedOn == null) return
      // a result that might not fit is left out: its readers read it
      const end: Announced = outcome.result !== null && Buffer.byteLength(outcome.result) > PAYLOAD_MAX / 4
        ? [id]
        : [
          id,
          outcome.status,
          outcome.finished_at === null ? null : outcome.finished_at.toISOString(),
          outcome.result,
          outcome.error_code
        ]
      for (const to of waitedOn) {
        if (to === channel) continue
        const ends = unannounced.get(to)
        if (ends === undefined) unannounced.set(to, [end])
        else ends.push(end)
      }
      if (unannounced.size > 0 && !announcing) announce()
    }

    /** Whether anything here waits for the task's end. */
    const watched = (id: TaskId) => waiters.has(id)

    return { channel, watch, onEnd, ended, watched, track, known } as const
  })
}) {}
