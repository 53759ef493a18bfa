import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Fewer index writes per task, and no lock contention between tasks of one agent:
 *   - the recovery sweep's index keys on `finished_at IS NULL` instead of the status, so that a task's
 *     start (pending → executing) changes no indexed column and can be a HOT update; room is left in each
 *     page for it (fillfactor);
 *   - tasks no longer have foreign keys to their agent and organization: each insert took a KEY SHARE
 *     lock on the agent's row, and concurrent invocations of one agent contended on it. The insert reads
 *     the agent within its organization in the same statement, and agents and organizations are never
 *     deleted (an agent's deletion is a `deleted_at`).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX tasks_unfinished`
  yield* sql`CREATE INDEX tasks_unfinished ON tasks (id) WHERE finished_at IS NULL`
  yield* sql`ALTER TABLE tasks SET (fillfactor = 90)`
  yield* sql`
    ALTER TABLE tasks
      DROP CONSTRAINT IF EXISTS tasks_agent_id_fkey,
      DROP CONSTRAINT IF EXISTS tasks_organization_id_fkey`
})
