import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Gated shell commands (issue 25): each agent's command policy, and requests for approval of commands.
 * A command's approval is an approval like a tool call's (the same inbox and decision), with `kind`
 * `command`; it may belong to no task (a runtime that checks without `task_id`), and names no connection.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE command_policies (
      agent_id uuid PRIMARY KEY REFERENCES agents(id),
      organization_id uuid NOT NULL REFERENCES organizations(id),
      default_action text NOT NULL CHECK (default_action IN ('allow', 'deny', 'require_approval')),
      rules jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      updated_by jsonb
    )`
  yield* sql`
    ALTER TABLE approvals ADD COLUMN kind text NOT NULL DEFAULT 'tool_call' CHECK (kind IN ('tool_call', 'command'))`
  yield* sql`ALTER TABLE approvals ALTER COLUMN task_id DROP NOT NULL`
  yield* sql`ALTER TABLE approvals ALTER COLUMN connection_id DROP NOT NULL`
  yield* sql`ALTER TABLE approvals ALTER COLUMN operation_id DROP NOT NULL`
  yield* sql`
    ALTER TABLE approvals ADD CONSTRAINT approvals_tool_call_fields
      CHECK (kind = 'command' OR (task_id IS NOT NULL AND connection_id IS NOT NULL AND operation_id IS NOT NULL))`
})
