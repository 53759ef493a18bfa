import { PgClient } from "@effect/sql-pg"
import { Effect, Option, Schedule } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { TaskPlacement } from "./TaskPlacement.js"

/** How often a node says which shards it holds (when they changed; else every HEARTBEAT_EVERY). */
const PUBLISH_EVERY = "1 second"
const HEARTBEAT_EVERY_MS = 5_000
/** A node not heard from for this long is left out: dead, or cut off. */
const STALE_SECONDS = 10

/**
 * Which node holds which task shards, for handing a long poll to the node that runs its task (issue 20).
 * A task runs on the node that holds its shard; a `?wait=` on any other node had to register in the task's
 * row and wait for a notification from the ending node (a statement, a notification and a fiber: about
 * 1.2 ms of CPU for the two nodes). The node that runs it answers a long poll from memory instead.
 *
 * Each node writes its own URL and shards to `shard_directory` (unlogged) when they change, and at least
 * every 5 s, and reads everyone else's every second. The view is a hint, never trusted for correctness: a
 * node that no longer holds the shard answers the poll the ordinary way, and a node that cannot be reached
 * leaves it to the asking node (FastTasks).
 */
export class ShardDirectory extends Effect.Service<ShardDirectory>()("tasks/ShardDirectory", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const config = yield* SwitchyardConfig
    const placement = yield* TaskPlacement
    const self = Option.getOrElse(config.internalUrl, () => `http://${config.runner.host}:${config.httpPort}`)
      .replace(/\/+$/, "")
    let owners = new Map<number, string>()

    if (!config.forwardWaits) return { self, ownerOf: (_taskId: string): string | undefined => undefined } as const

    let published = ""
    let publishedAt = 0
    const publish = Effect.suspend(() => {
      const shards = placement.ownedShards()
      const key = shards.join(",")
      if (key === published && Date.now() - publishedAt < HEARTBEAT_EVERY_MS) return Effect.void
      return sql`
        INSERT INTO shard_directory (url, shards, seen_at) VALUES (${self}, ${shards}::int[], now())
        ON CONFLICT (url) DO UPDATE SET shards = excluded.shards, seen_at = now()`.pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            published = key
            publishedAt = Date.now()
          })
        )
      )
    })
    const read = Effect.map(
      sql<{ url: string; shards: Array<number> }>`
        SELECT url, shards FROM shard_directory
        WHERE url <> ${self} AND seen_at > now() - make_interval(secs => ${STALE_SECONDS})
        ORDER BY seen_at`,
      (rows) => {
        // the latest word wins where two nodes claim a shard (one of them is about to let it go)
        const next = new Map<number, string>()
        for (const row of rows) for (const shard of row.shards) next.set(shard, row.url)
        owners = next
      }
    )
    yield* Effect.zipRight(publish, read).pipe(
      Effect.catchAllCause((cause) => Effect.logDebug("shard directory refresh failed", cause)),
      Effect.withTracerEnabled(false), // bookkeeping every second: not a root span each time in the traces
      Effect.repeat(Schedule.spaced(PUBLISH_EVERY)),
      Effect.forkScoped
    )
    // a node that stops says so, so no poll is handed to it meanwhile
    yield* Effect.addFinalizer(() =>
      sql`DELETE FROM shard_directory WHERE url = ${self}`.pipe(Effect.timeout("2 seconds"), Effect.ignore)
    )

    /** The URL of the node that holds the task's shard, when it is another live node. */
    const ownerOf = (taskId: string): string | undefined => owners.get(placement.shardOf(taskId))

    return { self, ownerOf } as const
  })
}) {}
