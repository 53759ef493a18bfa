import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE skills (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      owner_id uuid REFERENCES users(id),
      visibility text NOT NULL CHECK (visibility IN ('private', 'restricted', 'organization')),
      allowlist uuid[] NOT NULL DEFAULT '{}',
      status text NOT NULL CHECK (status IN ('draft', 'published', 'archived')),
      version int NOT NULL DEFAULT 1,
      actions jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      published_at timestamptz
    )`
  // one live skill per name in an organization: a manifest publishes by name
  yield* sql`CREATE UNIQUE INDEX skills_name ON skills (organization_id, lower(name)) WHERE status <> 'archived'`
  yield* sql`CREATE INDEX skills_organization ON skills (organization_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE skill_versions (
      skill_id uuid NOT NULL REFERENCES skills(id),
      version int NOT NULL,
      name text NOT NULL,
      description text NOT NULL,
      actions jsonb NOT NULL,
      created_by uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (skill_id, version)
    )`
  yield* sql`
    CREATE TABLE agent_skills (
      agent_id uuid NOT NULL REFERENCES agents(id),
      skill_id uuid NOT NULL REFERENCES skills(id),
      attached_by uuid,
      attached_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, skill_id)
    )`
  yield* sql`CREATE INDEX agent_skills_skill ON agent_skills (skill_id)`
  yield* sql`
    CREATE TABLE skill_violations (
      id bigserial PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      skill_id uuid NOT NULL REFERENCES skills(id),
      agent_id uuid NOT NULL REFERENCES agents(id),
      task_id uuid REFERENCES tasks(id),
      kind text NOT NULL CHECK (kind IN ('attach', 'use')),
      tool text,
      mode text NOT NULL,
      actor jsonb,
      at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX skill_violations_organization ON skill_violations (organization_id, at DESC, id DESC)`
  yield* sql`
    CREATE TABLE approvals (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      task_id uuid NOT NULL REFERENCES tasks(id),
      step_key text NOT NULL,
      agent_id uuid NOT NULL REFERENCES agents(id),
      skill_id uuid REFERENCES skills(id),
      tool text NOT NULL,
      connection_id uuid NOT NULL,
      operation_id text NOT NULL,
      arguments jsonb NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
      requested_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      decided_at timestamptz,
      decided_by jsonb,
      reason text,
      UNIQUE (task_id, step_key)
    )`
  yield* sql`CREATE INDEX approvals_organization ON approvals (organization_id, status, requested_at DESC, id DESC)`
  yield* sql`CREATE INDEX approvals_pending_expiry ON approvals (expires_at) WHERE status = 'pending'`
  // a task that waits for a person's decision
  yield* sql`ALTER TABLE tasks DROP CONSTRAINT tasks_status_check`
  yield* sql`
    ALTER TABLE tasks ADD CONSTRAINT tasks_status_check
      CHECK (status IN ('pending', 'executing', 'waiting_approval', 'completed', 'error', 'cancelled'))`
})
