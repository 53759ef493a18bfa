import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * How the person who approved an MCP client had signed in (`password` or `sso`), kept with the code and the
 * grant: a password reset ends what password sign-ins authorized, turning single sign-on off (or changing
 * its provider) what its sign-ins did. Null for those approved before this release: either ending revokes them.
 * And an access token's own scope, when a refresh asked for less than its grant's (null: the grant's).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of ["oauth_codes", "oauth_grants"]) {
    yield* sql.unsafe(`ALTER TABLE ${table} ADD COLUMN sign_in text CHECK (sign_in IN ('password', 'sso'))`)
  }
  yield* sql`ALTER TABLE oauth_tokens ADD COLUMN scope text`
  yield* sql`CREATE INDEX oauth_codes_pending ON oauth_codes (organization_id, user_id) WHERE grant_id IS NULL`
  yield* sql`CREATE INDEX oauth_grants_live_user ON oauth_grants (user_id) WHERE revoked_at IS NULL`
})
