import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Credentials left behind from before archiving a connector deleted its connections and erased their
 * credentials (as deleting a connection does): the connections of archived connectors are deleted, and no
 * deleted connection keeps its credentials. Nothing could use them any more; no secret should outlive its use.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE connections c
    SET deleted_at = coalesce(c.deleted_at, now()), credentials = NULL, key_version = NULL, updated_at = now()
    WHERE (c.deleted_at IS NOT NULL AND c.credentials IS NOT NULL)
      OR (c.deleted_at IS NULL AND EXISTS (
        SELECT 1 FROM connectors k WHERE k.id = c.connector_id AND k.archived_at IS NOT NULL))`
})
