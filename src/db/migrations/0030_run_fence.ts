import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A task's runs are fenced (issue 20: at most one node runs a task). Each run claims the task by raising
 * `run_epoch` and writes its steps only while the epoch is still its own, so a node that lost the task's
 * shard without knowing it yet (paused, cut off) stops at its next write. `call_in_flight` is the step key
 * of the tool call a run was about to make: a run that finds it without the call's result does not make
 * the call again (at most once; the model is told the outcome is unknown).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE tasks
      ADD COLUMN run_epoch integer NOT NULL DEFAULT 1,
      ADD COLUMN call_in_flight text`
})
