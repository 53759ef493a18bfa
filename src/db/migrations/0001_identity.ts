import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE organizations (
      id uuid PRIMARY KEY,
      name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY,
      email text NOT NULL,
      name text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX users_email ON users (lower(email))`
  yield* sql`
    CREATE TABLE memberships (
      organization_id uuid NOT NULL REFERENCES organizations(id),
      user_id uuid NOT NULL REFERENCES users(id),
      role text NOT NULL CHECK (role IN ('super_admin', 'admin', 'member')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, user_id)
    )`
  yield* sql`CREATE INDEX memberships_user ON memberships (user_id)`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      kind text NOT NULL CHECK (kind IN ('organization', 'personal')),
      name text NOT NULL,
      role text NOT NULL CHECK (role IN ('super_admin', 'admin', 'member')),
      user_id uuid REFERENCES users(id),
      agent_ids jsonb,
      secret_hash bytea NOT NULL,
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      last_used_at timestamptz,
      revoked_at timestamptz,
      CHECK ((kind = 'personal') = (user_id IS NOT NULL))
    )`
  yield* sql`CREATE INDEX api_keys_organization ON api_keys (organization_id, created_at)`
})
