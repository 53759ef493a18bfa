import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What a cluster of nodes needs of the task table (issue 20):
 *   - `shard`: the task's shard (1…SWITCHYARD_SHARDS_PER_GROUP), written by the node that inserts it. Each
 *     node's recovery sweep reads only the unfinished tasks of its own shards, by index, where every node
 *     paged through every unfinished task of the cluster each interval. Tasks from before (or inserted by a
 *     node of an earlier release) have none, and are found by the same index (a null key is a key);
 *   - `waiters`: the nodes (their wake-up channels) where a reader waits for the task's end, registered by
 *     the reader's node. The node that ends the task notifies those channels only, where it once notified
 *     every node of every end. Not indexed, so a registration is a HOT update.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks ADD COLUMN shard smallint, ADD COLUMN waiters text[]`
  yield* sql`CREATE INDEX tasks_unfinished_shard ON tasks (shard, id) WHERE finished_at IS NULL`
  // it holds every unfinished task: the one it replaces would be one index write per task too many
  yield* sql`DROP INDEX tasks_unfinished`
})
