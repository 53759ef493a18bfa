import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The OAuth 2.1 authorization server behind the MCP endpoint, its sign-in pages and MCP sessions.
 * Every secret (password, code, token, session id) is stored only as a hash.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE user_passwords (
      user_id uuid PRIMARY KEY REFERENCES users(id),
      hash text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  // registered clients (RFC 7591) and fetched Client ID Metadata Documents (the id is then the URL)
  yield* sql`
    CREATE TABLE oauth_clients (
      id text PRIMARY KEY,
      kind text NOT NULL CHECK (kind IN ('registered', 'metadata_document')),
      name text,
      client_uri text,
      redirect_uris jsonb NOT NULL,
      auth_method text NOT NULL CHECK (auth_method IN ('none', 'client_secret_basic', 'client_secret_post')),
      secret_hash bytea,
      scope text,
      created_at timestamptz NOT NULL DEFAULT now(),
      fetched_at timestamptz
    )`
  yield* sql`
    CREATE TABLE web_sessions (
      id_hash bytea PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )`
  // one grant per approval: what users list and revoke; its tokens form one refresh family
  yield* sql`
    CREATE TABLE oauth_grants (
      id text PRIMARY KEY,
      client_id text NOT NULL REFERENCES oauth_clients(id),
      organization_id uuid NOT NULL REFERENCES organizations(id),
      user_id uuid NOT NULL REFERENCES users(id),
      resource text NOT NULL,
      scope text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX oauth_grants_user ON oauth_grants (organization_id, user_id, created_at DESC)`
  yield* sql`
    CREATE TABLE oauth_codes (
      code_hash bytea PRIMARY KEY,
      client_id text NOT NULL REFERENCES oauth_clients(id),
      organization_id uuid NOT NULL REFERENCES organizations(id),
      user_id uuid NOT NULL REFERENCES users(id),
      redirect_uri text NOT NULL,
      code_challenge text NOT NULL,
      resource text NOT NULL,
      scope text NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      grant_id text REFERENCES oauth_grants(id)
    )`
  yield* sql`
    CREATE TABLE oauth_tokens (
      token_hash bytea PRIMARY KEY,
      kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
      grant_id text NOT NULL REFERENCES oauth_grants(id),
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)`
  // MCP sessions live here, not in a node's memory: any node serves any request of a session
  yield* sql`
    CREATE TABLE mcp_sessions (
      id_hash bytea PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      user_id uuid NOT NULL REFERENCES users(id),
      resource text NOT NULL,
      protocol_version text NOT NULL,
      client_info jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      ended_at timestamptz
    )`
})
