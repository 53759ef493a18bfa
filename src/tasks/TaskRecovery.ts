import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Schedule } from "effect"
import type { TaskId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Approvals } from "../skills/Approvals.js"
import { TaskPlacement } from "./TaskPlacement.js"
import { TaskRuns } from "./TaskRuns.js"

const PAGE = 500

/**
 * Finds unfinished tasks on this node's shards that nothing here is running, and runs them: a task
 * whose node died (its shards came here), whose Run message was lost in flight, or that was accepted
 * just before its node stopped. The task row is the durable record; this sweep is what makes it so.
 * A fresh task gets a moment first, since its Run is normally on its way.
 *
 * It reads the unfinished tasks of this node's shards only (their `shard` column, by index), and those
 * without one (from before it, or from a node of an earlier release); its first pass after the node
 * starts reads them all, in case the shard count changed since they were written (it only changes with
 * a restart of every node).
 */
export const TaskRecoveryLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* SwitchyardConfig
    const runs = yield* TaskRuns
    const approvals = yield* Approvals
    const placement = yield* TaskPlacement
    const graceSeconds = Math.max(1, Duration.toSeconds(config.taskSweepInterval))

    let full = true
    const sweep = Effect.gen(function*() {
      // a stopping node starts nothing: the tasks it stopped are the next owner's (it said "resumed" of them)
      if (runs.isStopping()) return
      let after = "00000000-0000-0000-0000-000000000000"
      let revived = 0
      const owned = placement.ownedShards()
      const mine = full ? sql`` : sql`AND (shard = ANY(${owned}::int[]) OR shard IS NULL)`
      full = false
      while (true) {
        const rows = yield* sql<{ id: string }>`
          SELECT id FROM tasks
          WHERE finished_at IS NULL ${mine} AND status IN ('pending', 'executing') AND id > ${after}::uuid
            AND created_at < now() - make_interval(secs => ${graceSeconds})
          ORDER BY id LIMIT ${PAGE}`.pipe(Effect.withTracerEnabled(false)) // a poll: no root span a second
        for (const { id } of rows) {
          if (runs.isRunning(id) || !runs.shardIsHere(id)) continue
          revived++
          yield* runs.start(id as TaskId)
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
