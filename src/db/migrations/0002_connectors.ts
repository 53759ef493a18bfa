import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE connectors (
      id uuid PRIMARY KEY,
      organization_id uuid REFERENCES organizations(id),
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      document jsonb NOT NULL,
      imported jsonb NOT NULL,
      server_url text,
      built_in boolean NOT NULL DEFAULT false,
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      archived_at timestamptz,
      CHECK (built_in = (organization_id IS NULL))
    )`
  yield* sql`CREATE INDEX connectors_catalog ON connectors (organization_id, lower(name), id) WHERE archived_at IS NULL`
  yield* sql`
    CREATE TABLE connections (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      connector_id uuid NOT NULL REFERENCES connectors(id),
      name text NOT NULL,
      access_scope text NOT NULL CHECK (access_scope IN ('organizational', 'personal')),
      owner_user_id uuid REFERENCES users(id),
      auth_type text NOT NULL CHECK (auth_type IN ('none', 'api_key', 'bearer', 'basic', 'oauth2')),
      security_scheme text,
      server_url text,
      status text NOT NULL CHECK (status IN ('active', 'pending_authorization', 'needs_reauthentication')),
      credentials bytea,
      key_version int,
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz,
      CHECK ((access_scope = 'personal') = (owner_user_id IS NOT NULL))
    )`
  yield* sql`CREATE INDEX connections_connector ON connections (organization_id, connector_id) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE connection_authorizations (
      state_hash bytea PRIMARY KEY,
      connection_id uuid NOT NULL REFERENCES connections(id),
      sealed bytea NOT NULL,
      key_version int NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`
    CREATE TABLE connector_invocations (
      id bigserial PRIMARY KEY,
      organization_id uuid NOT NULL,
      connector_id uuid NOT NULL,
      connection_id uuid NOT NULL,
      operation_id text NOT NULL,
      api_key_id text,
      user_id uuid,
      task_id text,
      status int,
      error_code text,
      duration_ms double precision NOT NULL,
      request_bytes bigint NOT NULL,
      response_bytes bigint,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX connector_invocations_org ON connector_invocations (organization_id, created_at)`
})
