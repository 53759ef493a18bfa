import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Agent versions: every change to an agent makes a new numbered version whose snapshot is kept
 * (`agent_versions`), and a task names the version it runs (`tasks.agent_version`). Its own copy of the
 * agent (`agent_snapshot`, most of a task row's size) becomes optional: tasks keep writing it while
 * nodes of the previous release may still run them (a rolling upgrade), and a later release stops.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE agents ADD COLUMN version int NOT NULL DEFAULT 1`
  yield* sql`
    CREATE TABLE agent_versions (
      agent_id uuid NOT NULL REFERENCES agents(id),
      version int NOT NULL,
      snapshot jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, version)
    )`
  yield* sql`
    INSERT INTO agent_versions (agent_id, version, snapshot, created_at)
    SELECT a.id, a.version, to_jsonb(a), a.updated_at FROM agents a`
  yield* sql`ALTER TABLE tasks ADD COLUMN agent_version int, ALTER COLUMN agent_snapshot DROP NOT NULL`
})
