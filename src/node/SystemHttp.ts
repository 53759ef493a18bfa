import { HttpApiBuilder } from "@effect/platform"
import { Duration, Effect } from "effect"
import { Api, Readiness } from "../../schema/Api.js"
import { ServiceUnavailable } from "../../schema/Errors.js"
import { shardOwnership, stalledTasks } from "../cluster/ClusterRunner.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { appliedMigration, latestMigration } from "../db/Migrations.js"
import { Drain } from "../http/Drain.js"

/**
 * `/healthz` and `/readyz`: the node's health, not the HTTP edge's. Ready means this node is not draining,
 * the database has every migration, its cluster runner is registered and owns shards, and its task loops
 * are not stalled.
 */
export const SystemHttpLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const drain = yield* Drain
    const config = yield* SwitchyardConfig
    const readiness = Effect.gen(function*() {
      if (drain.isDraining()) return yield* ServiceUnavailable.of("This node is shutting down.")
      const applied = yield* appliedMigration.pipe(
        Effect.timeout("3 seconds"),
        Effect.catchAll(() => ServiceUnavailable.of("The database is not reachable."))
      )
      if (applied < latestMigration) {
        return yield* ServiceUnavailable.of("Database migrations are not applied yet.", {
          applied,
          latestMigration
        })
      }
      const shards = yield* shardOwnership.pipe(
        Effect.catchAll(() => ServiceUnavailable.of("The database is not reachable."))
      )
      if (!shards.registered) {
        return yield* ServiceUnavailable.of("This node's runner is not registered in the cluster.", shards)
      }
      if (shards.owned === 0) {
        return yield* ServiceUnavailable.of("This node owns no shards yet.", shards)
      }
      const stalled = yield* stalledTasks(config.readyStallAfter).pipe(Effect.catchAll(() => Effect.succeed(0)))
      if (stalled > 0) {
        return yield* ServiceUnavailable.of(
          `${stalled} task(s) on this node's shards have waited more than ${Duration.format(config.readyStallAfter)} ` +
            "to start: its task loops look stalled.",
          { ...shards, stalled_tasks: stalled }
        )
      }
      return new Readiness({
        status: "ready",
        node: shards.address,
        shards_owned: shards.owned,
        shards_total: shards.total
      })
    }).pipe(
      // a node that turns unready says why in its log: the load balancer only sees the status
      Effect.tapError((e) => Effect.logWarning(`not ready: ${e.message}`))
    )
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () => readiness)
  }))
