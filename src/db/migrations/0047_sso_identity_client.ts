import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The client an identity last signed in through: a new subject for an e-mail already linked at the same issuer
 * and client is another account at the provider, not the same person (some providers, Entra ID, give each
 * client its own subjects, so another client is not a conflict). Rows linked before this are taken to be of the
 * organization's present client when they are of its present issuer; null (never a conflict) otherwise.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE sso_identities ADD COLUMN client_id text`
  yield* sql`
    UPDATE sso_identities i SET client_id = s.client_id FROM sso_settings s
    WHERE s.organization_id = i.organization_id AND s.issuer = i.issuer`
  // a person's links in an organization: looked up at sign-in, removed with the member
  yield* sql`CREATE INDEX sso_identities_user ON sso_identities (organization_id, user_id)`
})
