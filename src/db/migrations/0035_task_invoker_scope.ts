import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The agents the invoker of a task may reach (their key's or grant's agent scope; null: every agent). A run
 * acts as its invoker, so what it calls on their behalf (the built-in Switchyard connector, a function's
 * connector calls) stays inside that scope: a key limited to one agent cannot reach others through it.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE tasks ADD COLUMN invoker_agent_ids jsonb`
  // tasks under way when this runs: their own agent only (their invoker's scope was not kept), the narrowest
  // scope that still lets the run reach what it was invoked for
  yield* sql`UPDATE tasks SET invoker_agent_ids = jsonb_build_array(agent_id) WHERE finished_at IS NULL`
})
