import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { eventTriggers, triggerFunction } from "./0021_event_writes.js"

/**
 * Why a task failed, as a stable code (`error_code`, schema/Agents.ts TaskErrorCode) beside `result`, which
 * says it for a person; null for tasks that did not fail and for those that failed before this release. The
 * task's end event (task.error) carries it too: the two task triggers' functions are written again with it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks ADD COLUMN error_code text`
  for (const trigger of eventTriggers("json_build_object", { errorCode: true })) {
    if (trigger.name === "events_tasks_inserted" || trigger.name === "events_tasks_updated") {
      yield* sql.unsafe(triggerFunction(trigger))
    }
  }
})
