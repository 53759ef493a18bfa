import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A task's runs are fenced (issue 20: at most one node runs a task). Each run claims the task by raising
 * `run_epoch` (0 for a task not yet run, 1 for its first run) and writes its steps only while the epoch is
 * still its own, so a node that lost the task's shard without knowing it yet (paused, cut off) stops at its
 * next write. `task_calls` holds the step key of each tool call a run was about to make, written before the
 * call: a run that finds a call there without its result does not make it again (at most once). Inserts
 * only, narrow: marking a call in the wide `tasks` row cost a new row version (and its index entries) per call.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks ADD COLUMN run_epoch integer NOT NULL DEFAULT 0`
  // tasks under way when this runs: their runs so far count as the first
  yield* sql`UPDATE tasks SET run_epoch = 1 WHERE finished_at IS NULL AND status <> 'pending'`
  yield* sql`
    CREATE TABLE task_calls (
      task_id uuid NOT NULL,
      step_key text NOT NULL,
      PRIMARY KEY (task_id, step_key)
    )`
})
