import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A document added as a new version of another names it in `replaces`; the old one is deleted when the new one
 * is ready, in the statement that makes it ready, so search answers from one of them at every moment. No
 * foreign key: the old one may be deleted first, and deleting it must not touch the new one.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE knowledge_documents ADD COLUMN replaces uuid`
})
