import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Roles gain `builder`; groups with shared defaults; the audit log with its per-organization hash chain. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const table of ["memberships", "api_keys"]) {
    yield* sql`ALTER TABLE ${sql(table)} DROP CONSTRAINT ${sql(`${table}_role_check`)}`
    yield* sql`
      ALTER TABLE ${sql(table)} ADD CONSTRAINT ${sql(`${table}_role_check`)}
      CHECK (role IN ('super_admin', 'admin', 'builder', 'member'))`
  }
  // milliseconds, as JavaScript dates hold them: page cursors carry these times exactly
  yield* sql`
    CREATE TABLE groups (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      default_role text CHECK (default_role IN ('super_admin', 'admin', 'builder', 'member')),
      agent_ids jsonb NOT NULL DEFAULT '[]',
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX groups_name ON groups (organization_id, lower(name))`
  yield* sql`CREATE INDEX groups_organization ON groups (organization_id, created_at, id)`
  // leaving the organization leaves its groups too
  yield* sql`
    CREATE TABLE group_members (
      group_id uuid NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
      organization_id uuid NOT NULL,
      user_id uuid NOT NULL,
      added_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (group_id, user_id),
      FOREIGN KEY (organization_id, user_id) REFERENCES memberships(organization_id, user_id) ON DELETE CASCADE
    )`
  yield* sql`CREATE INDEX group_members_user ON group_members (organization_id, user_id)`
  yield* sql`
    CREATE TABLE audit_events (
      organization_id uuid NOT NULL REFERENCES organizations(id),
      seq bigint NOT NULL,
      id uuid NOT NULL UNIQUE,
      time timestamptz NOT NULL,
      actor_type text NOT NULL CHECK (actor_type IN ('user', 'api_key', 'oauth_client', 'system')),
      actor_id text NOT NULL,
      actor_key_id text,
      action text NOT NULL,
      targets jsonb NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('success', 'denied', 'failure')),
      ip text,
      user_agent text,
      request_id text,
      details jsonb,
      prev_hash text NOT NULL,
      hash text NOT NULL,
      PRIMARY KEY (organization_id, seq)
    )`
  yield* sql`CREATE INDEX audit_events_action ON audit_events (organization_id, action, seq)`
  yield* sql`CREATE INDEX audit_events_time ON audit_events (organization_id, time)`
  // one row per organization: locking it serializes appends, and it remembers the chain's end
  // (so deleting the newest records is detected too)
  yield* sql`
    CREATE TABLE audit_chain_heads (
      organization_id uuid PRIMARY KEY REFERENCES organizations(id),
      seq bigint NOT NULL,
      hash text NOT NULL
    )`
})
