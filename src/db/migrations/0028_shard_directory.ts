import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Which node holds which task shards, as each node last said (issue 20): a long poll of a task on a node that
 * does not run it is handed to the node that does (src/tasks/ShardDirectory.ts). Unlogged: every row is
 * written again within seconds by a live node, so a crash loses nothing that matters.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE UNLOGGED TABLE shard_directory (
      url text PRIMARY KEY,
      shards int[] NOT NULL,
      seen_at timestamptz NOT NULL DEFAULT now()
    )`
})
