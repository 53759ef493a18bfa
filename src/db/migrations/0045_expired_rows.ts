import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What the sweep of expired security rows (src/security/ExpiredRows.ts) reads: OAuth tokens, two per refresh,
 * are the rows that grow with use, so each pass finds its batch by index rather than by reading them all.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at)`
  yield* sql`CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at)`
})
