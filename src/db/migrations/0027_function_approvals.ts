import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Custom functions as skill actions (issue 25): a call of one may need approval like a connector call. Its
 * request names the function instead of a connection and an operation.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE approvals ADD COLUMN function_id uuid`
  yield* sql`ALTER TABLE approvals DROP CONSTRAINT approvals_tool_call_fields`
  yield* sql`
    ALTER TABLE approvals ADD CONSTRAINT approvals_tool_call_fields
      CHECK (kind = 'command' OR (task_id IS NOT NULL AND
        ((connection_id IS NOT NULL AND operation_id IS NOT NULL) OR function_id IS NOT NULL)))`
})
