import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE agents (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      name text NOT NULL,
      instructions text NOT NULL DEFAULT '',
      model jsonb NOT NULL,
      skills jsonb NOT NULL DEFAULT '[]',
      budget jsonb,
      max_steps int NOT NULL,
      max_tokens int,
      timeout_seconds int,
      created_by uuid REFERENCES users(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  yield* sql`CREATE INDEX agents_organization ON agents (organization_id, created_at, id) WHERE deleted_at IS NULL`
  yield* sql`
    CREATE TABLE tasks (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      agent_id uuid NOT NULL REFERENCES agents(id),
      status text NOT NULL CHECK (status IN ('pending', 'executing', 'completed', 'error', 'cancelled')),
      result text,
      source text NOT NULL,
      user_id text NOT NULL,
      user_email text NOT NULL,
      input text NOT NULL,
      agent_snapshot jsonb NOT NULL,
      api_key_id text,
      oidc_token bytea,
      idempotency_key text,
      request_hash text,
      created_at timestamptz NOT NULL DEFAULT now(),
      started_at timestamptz,
      finished_at timestamptz
    )`
  yield* sql`CREATE INDEX tasks_organization ON tasks (organization_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX tasks_agent ON tasks (agent_id, created_at DESC)`
  yield* sql`CREATE UNIQUE INDEX tasks_idempotency ON tasks (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL`
  yield* sql`
    CREATE TABLE task_events (
      task_id uuid NOT NULL REFERENCES tasks(id),
      seq int NOT NULL,
      type text NOT NULL,
      step_key text,
      at timestamptz NOT NULL DEFAULT now(),
      data jsonb NOT NULL,
      PRIMARY KEY (task_id, seq)
    )`
  // a recorded step is never recorded (or executed) twice: the replay key of model and tool calls
  yield* sql`CREATE UNIQUE INDEX task_events_step ON task_events (task_id, step_key) WHERE step_key IS NOT NULL`
  yield* sql`
    CREATE TABLE llm_usage (
      task_id uuid NOT NULL REFERENCES tasks(id),
      seq int NOT NULL,
      organization_id uuid NOT NULL,
      agent_id uuid NOT NULL,
      provider text NOT NULL,
      model text NOT NULL,
      input_tokens int NOT NULL,
      output_tokens int NOT NULL,
      cached_tokens int NOT NULL,
      cost_usd numeric(14, 8) NOT NULL,
      at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (task_id, seq)
    )`
  yield* sql`
    CREATE TABLE agent_spend (
      agent_id uuid NOT NULL REFERENCES agents(id),
      period_start timestamptz NOT NULL,
      spent_usd numeric(14, 8) NOT NULL DEFAULT 0,
      exhausted boolean NOT NULL DEFAULT false,
      PRIMARY KEY (agent_id, period_start)
    )`
  yield* sql`
    CREATE TABLE model_providers (
      organization_id uuid NOT NULL REFERENCES organizations(id),
      provider text NOT NULL,
      base_url text,
      api_key bytea,
      key_version int,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, provider)
    )`
  yield* sql`ALTER TABLE connector_invocations ADD COLUMN on_behalf_of text`
})
