import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // the recovery sweep pages through unfinished tasks by id: a small index, only unfinished rows
  yield* sql`CREATE INDEX tasks_unfinished ON tasks (id) WHERE status IN ('pending', 'executing')`
})
