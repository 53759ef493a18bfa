import * as ShardId from "@effect/cluster/ShardId"
import * as Sharding from "@effect/cluster/Sharding"
import * as ShardingConfig from "@effect/cluster/ShardingConfig"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Schedule, Stream } from "effect"
import type { TaskOutcome } from "../../cluster/TaskEntity.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import { PgPool } from "../db/PgPool.js"
import type { TaskSummary } from "./TaskRepo.js"

export const TASK_DONE_CHANNEL = "switchyard_task_done"

type Outcome = typeof TaskOutcome.Type

/** A waiter: woken with the outcome when this node ended the task, with nothing when told by a notification. */
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

/** Task ids per notification: a payload must stay under 8000 bytes. */
const IDS_PER_NOTIFY = 200

/**
 * Tells waiting readers when a task ends, on whatever node it ran. The node that ended it hands its own
 * waiters the outcome at once (`ended`), so they need not read the task again, and announces the end on
 * TASK_DONE_CHANNEL (PostgreSQL LISTEN/NOTIFY; the payload is task ids joined by commas) for the other
 * nodes' waiters. The announcement is sent after the ending commit, coalesced with others that ended
 * meanwhile: a NOTIFY inside each ending statement made every task's commit wait on the notification
 * queue and woke every listener per task. A notification lost (a node that died right after the commit, a
 * listener reconnecting) costs a waiter the periodic re-read of `Watch.next`'s caller, not the answer.
 * A node that owns every shard is alone (or others are joining, with no shards yet): it announces nothing.
 *
 * It also remembers the tasks invoked and run on this node for a while (`track`, `known`), kept current by
 * the ends this node makes: a reader of such a task is answered without reading it. An end announced by
 * another node makes it forget the task, so that readers read it again.
 */
export class TaskCompletions extends Effect.Service<TaskCompletions>()("tasks/TaskCompletions", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const pool = yield* PgPool
    const sharding = yield* Sharding.Sharding
    const { shardsPerGroup } = yield* ShardingConfig.ShardingConfig
    const waiters = new Map<string, Set<Wake>>()
    const wake = (id: string, ended: Outcome | undefined) => {
      for (const w of waiters.get(id) ?? []) w(ended)
    }
    const tracked = new Map<string, { task: KnownTask; readonly at: number }>()
    yield* sql.listen(TASK_DONE_CHANNEL).pipe(
      Stream.runForEach((payload) =>
        Effect.sync(() => {
          for (const id of payload.split(",")) {
            tracked.delete(id)
            wake(id, undefined)
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

    // whether this node owns every shard, looked at once a second
    let alone = false
    let aloneUntil = 0
    const isAlone = () => {
      const now = Date.now()
      if (now >= aloneUntil) {
        aloneUntil = now + 1000
        alone = true
        for (let i = 1; i <= shardsPerGroup && alone; i++) alone = sharding.hasShardId(ShardId.make("default", i))
      }
      return alone
    }

    // ends to announce, sent by one notification at a time
    const unannounced: Array<string> = []
    let announcing = false
    const announce = () => {
      announcing = true
      const ids = unannounced.splice(0, IDS_PER_NOTIFY)
      pool.query({
        name: "task_done_notify",
        text: "SELECT pg_notify($1, $2)",
        values: [TASK_DONE_CHANNEL, ids.join(",")]
      })
        .catch(() => undefined)
        .finally(() => (unannounced.length > 0 ? announce() : (announcing = false)))
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

    /** This node ended the task (committed): its waiters get the outcome at once, other nodes' by notification. */
    const ended = (id: TaskId, outcome: Outcome) => {
      const entry = tracked.get(id)
      if (entry !== undefined) entry.task = { ...entry.task, ...outcome }
      wake(id, outcome)
      if (isAlone()) return
      unannounced.push(id)
      if (!announcing) announce()
    }

    return { watch, onEnd, ended, track, known } as const
  })
}) {}
