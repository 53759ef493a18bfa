import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The person who invoked a task (their key's, grant's or session's user; null for an organization key). A
 * run acts as them, not as the agent's creator: a personal connection in an agent's skills is its owner's
 * alone, so another member invoking the agent must not reach the owner's credentials through it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks ADD COLUMN invoker_user_id uuid`
  // tasks under way when this runs: their invoker, where their key or MCP grant names one
  yield* sql`
    UPDATE tasks t SET invoker_user_id = coalesce(
      (SELECT k.user_id FROM api_keys k WHERE k.id = t.api_key_id),
      (SELECT g.user_id FROM oauth_grants g WHERE g.id = t.api_key_id))
    WHERE t.finished_at IS NULL`
})
