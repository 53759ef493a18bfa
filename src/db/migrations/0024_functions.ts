import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Custom functions (issue 25): JavaScript run in a QuickJS sandbox.
 *   - `functions`: one row per function, its current name and `current_version`; the name is unique in the
 *     organization (it is the agent tool's name).
 *   - `function_versions`: every version as written, never changed; an update adds one and moves
 *     `current_version` in the same transaction.
 *   - `agent_functions`: functions attached to an agent (its runs get them as tools).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE functions (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      name text NOT NULL,
      current_version integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (organization_id, name)
    )`
  yield* sql`
    CREATE TABLE function_versions (
      function_id uuid NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
      version integer NOT NULL,
      name text NOT NULL,
      description text NOT NULL,
      input_schema jsonb NOT NULL,
      code text NOT NULL,
      timeout_ms integer NOT NULL,
      memory_mb integer NOT NULL,
      created_by uuid,
      created_by_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (function_id, version)
    )`
  yield* sql`
    CREATE TABLE agent_functions (
      agent_id uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      function_id uuid NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, function_id)
    )`
  yield* sql`CREATE INDEX agent_functions_function ON agent_functions (function_id)`
})
