import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The bytes of each organization's ready files, kept by a trigger in the transaction that changes a file, so
 * the storage quota (FileRepo.usedBytes) reads one row instead of summing every file at each upload. Exact:
 * an uncommitted change holds the row's lock, so the total moves one transaction at a time, and every path
 * that changes `files` (uploads, deletes, the sweep, a cascade) passes through the trigger. A decrease only
 * updates (a missing row stays missing), an increase upserts.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE organization_file_bytes (
      organization_id uuid PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
      bytes bigint NOT NULL
    )`
  yield* sql`
    CREATE FUNCTION files_count_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      org uuid;
      delta bigint := 0;
    BEGIN
      IF TG_OP <> 'INSERT' AND OLD.status = 'ready' THEN
        delta := delta - OLD.size;
        org := OLD.organization_id;
      END IF;
      IF TG_OP <> 'DELETE' AND NEW.status = 'ready' THEN
        delta := delta + NEW.size;
        org := NEW.organization_id;
      END IF;
      IF delta > 0 THEN
        INSERT INTO organization_file_bytes AS b (organization_id, bytes) VALUES (org, delta)
        ON CONFLICT (organization_id) DO UPDATE SET bytes = b.bytes + delta;
      ELSIF delta < 0 THEN
        UPDATE organization_file_bytes SET bytes = bytes + delta WHERE organization_id = org;
      END IF;
      RETURN NULL;
    END $$`
  // no file changes between the sum and the trigger (a node of the previous release may still be writing)
  yield* sql`LOCK TABLE files IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`
    INSERT INTO organization_file_bytes (organization_id, bytes)
    SELECT organization_id, sum(size) FROM files WHERE status = 'ready' GROUP BY organization_id`
  yield* sql`
    CREATE TRIGGER files_count_bytes AFTER INSERT OR DELETE OR UPDATE OF status, size, organization_id ON files
    FOR EACH ROW EXECUTE FUNCTION files_count_bytes()`
})
