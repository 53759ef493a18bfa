import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A task's thread events and usage records no longer have foreign keys to the task: each of a task's
 * four such rows ran a check (a lookup and a KEY SHARE lock of the task's row), about a tenth of the
 * database's work per task. They are only ever written for a task that exists (by its run, its cancel
 * and its approvals, most in the statement that inserts, advances or ends it), and tasks are never
 * deleted.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE task_events DROP CONSTRAINT IF EXISTS task_events_task_id_fkey`
  yield* sql`ALTER TABLE llm_usage DROP CONSTRAINT IF EXISTS llm_usage_task_id_fkey`
})
