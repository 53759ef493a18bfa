import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Workspace files (issue 25): metadata in `files`, content in `file_chunks`, so every node serves every
 * file and a database backup holds them. A file is `uploading` (invisible) while its chunks are written
 * and `ready` once its size and SHA-256 are known; a ready file's bytes never change (a replacement is a
 * new id). Names sort byte-wise (`COLLATE "C"`): listings by prefix walk the index in name order.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE files (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id),
      agent_id uuid REFERENCES agents(id),
      name text COLLATE "C" NOT NULL,
      content_type text NOT NULL,
      size bigint NOT NULL DEFAULT 0,
      sha256 text,
      status text NOT NULL CHECK (status IN ('uploading', 'ready')),
      owner_type text NOT NULL CHECK (owner_type IN ('user', 'api_key', 'agent')),
      owner_id text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  // one ready file per name in a scope (the organization's, or one agent's workspace)
  yield* sql`
    CREATE UNIQUE INDEX files_name ON files
      (organization_id, coalesce(agent_id, '00000000-0000-0000-0000-000000000000'::uuid), name)
      WHERE status = 'ready'`
  yield* sql`CREATE INDEX files_listing ON files (organization_id, name, id) WHERE status = 'ready'`
  // uploads a crashed node left behind are swept by age
  yield* sql`CREATE INDEX files_uploading ON files (created_at) WHERE status = 'uploading'`
  // each chunk knows where it starts: a range finds its first chunk by index, whatever size chunks were written in
  yield* sql`
    CREATE TABLE file_chunks (
      file_id uuid NOT NULL REFERENCES files(id) ON DELETE CASCADE,
      start bigint NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (file_id, start)
    )`
  // stored out of line and uncompressed: a range reads only the slices it needs, and no CPU goes into
  // compressing what is usually compressed already
  yield* sql`ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL`
})
