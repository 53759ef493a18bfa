import * as EntityId from "@effect/cluster/EntityId"
import * as Sharding from "@effect/cluster/Sharding"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Schedule } from "effect"
import { TaskEntity } from "../../cluster/TaskEntity.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Approvals } from "../skills/Approvals.js"
import type { TaskRow } from "./TaskRepo.js"

const HANDOFF_TTL_MS = 30_000

/**
 * What this node knows about its tasks in memory: which runs are in progress here (their Task entity
 * is running them), and rows just inserted by an invoke on this node, handed to the local entity so
 * that a fresh run does not read back what was just written.
 */
export class LocalTasks extends Effect.Service<LocalTasks>()("tasks/LocalTasks", {
  sync: () => {
    const running = new Set<string>()
    const handoff = new Map<string, { readonly row: TaskRow; readonly at: number }>()
    return {
      running,
      offer: (row: TaskRow) => {
        const now = Date.now()
        // rows nobody took (the run went elsewhere) age out; the Map iterates oldest first
        for (const [id, entry] of handoff) {
          if (now - entry.at < HANDOFF_TTL_MS) break
          handoff.delete(id)
        }
        handoff.set(row.id, { row, at: now })
      },
      take: (id: string): TaskRow | undefined => {
        const entry = handoff.get(id)
        handoff.delete(id)
        return entry?.row
      }
    }
  }
}) {}

const PAGE = 500

/**
 * Finds unfinished tasks on this node's shards that nothing here is running, and runs them: a task
 * whose node died (its shards came here), whose Run message was lost in flight, or that was accepted
 * just before its node stopped. The task row is the durable record; this sweep is what makes it so.
 * A fresh task gets a moment first, since its Run is normally on its way.
 */
export const TaskRecoveryLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const sharding = yield* Sharding.Sharding
    const config = yield* SwitchyardConfig
    const local = yield* LocalTasks
    const client = yield* TaskEntity.client
    const approvals = yield* Approvals
    const graceSeconds = Math.max(1, Duration.toSeconds(config.taskSweepInterval))

    const sweep = Effect.gen(function*() {
      let after = "00000000-0000-0000-0000-000000000000"
      let revived = 0
      while (true) {
        const rows = yield* sql<{ id: string }>`
          SELECT id FROM tasks
          WHERE status IN ('pending', 'executing') AND id > ${after}::uuid
            AND created_at < now() - make_interval(secs => ${graceSeconds})
          ORDER BY id LIMIT ${PAGE}`
        for (const { id } of rows) {
          if (local.running.has(id) || !sharding.hasShardId(sharding.getShardId(EntityId.make(id), "default"))) continue
          revived++
          yield* client(id).Run({ task_id: id }, { discard: true }).pipe(Effect.ignore)
        }
        if (rows.length < PAGE) break
        after = rows[rows.length - 1]!.id
      }
      if (revived > 0) yield* Effect.logInfo(`resumed ${revived} unfinished task(s) on this node's shards`)
      // requests for approval past their time: their tasks go on, to end as documented
      yield* approvals.expireDue
    })

    yield* sweep.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("task sweep failed; trying again", cause)),
      Effect.repeat(Schedule.spaced(config.taskSweepInterval)),
      Effect.forkScoped
    )
  })
)
