import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Agent versions kept by the database itself: a change to an agent's configuration raises its version,
 * and every version's snapshot is kept. Any writer gets this, the nodes of the previous release too
 * (during a rolling upgrade they write agents knowing nothing of versions), so a task never runs an
 * agent whose version was not recorded. A write that changes nothing of the configuration (a deletion,
 * a PATCH with the same values) makes no version.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE FUNCTION agent_version_raise() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (NEW.name, NEW.instructions, NEW.model, NEW.skills, NEW.budget, NEW.max_steps, NEW.max_tokens,
          NEW.timeout_seconds) IS DISTINCT FROM (OLD.name, OLD.instructions, OLD.model, OLD.skills, OLD.budget,
          OLD.max_steps, OLD.max_tokens, OLD.timeout_seconds) THEN
        NEW.version := OLD.version + 1;
      END IF;
      RETURN NEW;
    END $$`
  yield* sql`
    CREATE TRIGGER agent_version_raise BEFORE UPDATE ON agents
    FOR EACH ROW EXECUTE FUNCTION agent_version_raise()`
  yield* sql`
    CREATE FUNCTION agent_version_keep() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO agent_versions (agent_id, version, snapshot, created_at)
      VALUES (NEW.id, NEW.version, to_jsonb(NEW), NEW.updated_at)
      ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER agent_version_keep AFTER INSERT OR UPDATE ON agents
    FOR EACH ROW EXECUTE FUNCTION agent_version_keep()`
  // agents written since the previous migration by nodes that knew nothing of versions
  yield* sql`
    INSERT INTO agent_versions (agent_id, version, snapshot, created_at)
    SELECT a.id, a.version, to_jsonb(a), a.updated_at FROM agents a
    ON CONFLICT DO NOTHING`
})
