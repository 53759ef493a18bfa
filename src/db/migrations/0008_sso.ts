import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** OIDC single sign-on: per-organization settings, pending sign-ins, linked identities, scoped web sessions. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // the client secret is sealed by the credential vault; domains are stored lowercased
  yield* sql`
    CREATE TABLE sso_settings (
      organization_id uuid PRIMARY KEY REFERENCES organizations(id),
      issuer text NOT NULL,
      client_id text NOT NULL,
      client_secret bytea NOT NULL,
      secret_key_version int NOT NULL,
      allowed_email_domains jsonb NOT NULL,
      group_claim text NOT NULL,
      group_mapping jsonb NOT NULL DEFAULT '[]',
      enabled boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX sso_settings_domains ON sso_settings USING gin (allowed_email_domains) WHERE enabled`
  // one row per sign-in started: found by the hash of `state`, bound to the browser that started it
  yield* sql`
    CREATE TABLE sso_logins (
      state_hash bytea PRIMARY KEY,
      browser_hash bytea NOT NULL,
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      code_verifier text NOT NULL,
      nonce text NOT NULL,
      request text NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE sso_identities (
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      issuer text NOT NULL,
      subject text NOT NULL,
      user_id uuid NOT NULL REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      last_sign_in_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, issuer, subject)
    )`
  // a session opened through an organization's identity provider may act in that organization only
  yield* sql`ALTER TABLE web_sessions ADD COLUMN organization_id uuid REFERENCES organizations(id) ON DELETE CASCADE`
})
