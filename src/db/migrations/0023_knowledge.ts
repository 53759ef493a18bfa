import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Knowledge bases (issue 25).
 *   - `knowledge_bases`: per organization, with a text search configuration (`language`, a regconfig name).
 *   - `knowledge_documents`: one per added document; `status` processing → ready | error, with `progress`.
 *     `seq` orders listings (keyset cursor). The source waits in `knowledge_document_sources` (inline text
 *     and fetched URLs; a file's bytes stay in the workspace) until it is ingested.
 *   - `knowledge_ingest_queue`: the durable queue. Any node claims due rows with `FOR UPDATE SKIP LOCKED` and
 *     leases them (`leased_until`); a node that dies mid-document lets its lease run out and another takes it
 *     over. The row goes when the document is ready or failed.
 *   - `knowledge_chunks`: passages with their heading path; `tsv` is generated from the chunk's own
 *     `language` (copied from its base: a generated column may read only its row) with the headings weighted
 *     above the text, GIN-indexed. `headings` is the path as one text (array_to_string is not immutable, so
 *     a generated column cannot use it).
 *   - `agent_knowledge_bases`: which bases an agent searches (spec 2.7).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE knowledge_bases (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      language text NOT NULL,
      created_by uuid,
      created_by_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX knowledge_bases_name ON knowledge_bases (organization_id, lower(name))`
  yield* sql`CREATE INDEX knowledge_bases_listing ON knowledge_bases (organization_id, created_at, id)`
  yield* sql`
    CREATE TABLE knowledge_documents (
      id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      knowledge_base_id uuid NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
      organization_id uuid NOT NULL,
      name text NOT NULL,
      format text NOT NULL CHECK (format IN ('txt', 'md', 'html', 'pdf')),
      size bigint NOT NULL,
      source_type text NOT NULL CHECK (source_type IN ('text', 'file', 'url')),
      source_file_id uuid,
      source_url text,
      status text NOT NULL CHECK (status IN ('processing', 'ready', 'error')),
      progress real NOT NULL DEFAULT 0,
      chunk_count int NOT NULL DEFAULT 0,
      error_reason text,
      error_message text,
      created_by uuid,
      created_by_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX knowledge_documents_listing ON knowledge_documents (knowledge_base_id, seq)`
  yield* sql`
    CREATE TABLE knowledge_document_sources (
      document_id uuid PRIMARY KEY REFERENCES knowledge_documents(id) ON DELETE CASCADE,
      data bytea NOT NULL
    )`
  yield* sql`
    CREATE TABLE knowledge_ingest_queue (
      document_id uuid PRIMARY KEY REFERENCES knowledge_documents(id) ON DELETE CASCADE,
      available_at timestamptz NOT NULL DEFAULT now(),
      leased_until timestamptz,
      attempts int NOT NULL DEFAULT 0
    )`
  yield* sql`CREATE INDEX knowledge_ingest_due ON knowledge_ingest_queue (available_at)`
  yield* sql`
    CREATE TABLE knowledge_chunks (
      id uuid PRIMARY KEY,
      document_id uuid NOT NULL REFERENCES knowledge_documents(id) ON DELETE CASCADE,
      knowledge_base_id uuid NOT NULL,
      chunk_index int NOT NULL,
      heading_path text[] NOT NULL,
      headings text NOT NULL,
      text text NOT NULL,
      language regconfig NOT NULL,
      tsv tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector(language, headings), 'A') ||
        setweight(to_tsvector(language, text), 'B')
      ) STORED,
      UNIQUE (document_id, chunk_index)
    )`
  yield* sql`CREATE INDEX knowledge_chunks_tsv ON knowledge_chunks USING gin (tsv)`
  yield* sql`CREATE INDEX knowledge_chunks_base ON knowledge_chunks (knowledge_base_id)`
  yield* sql`
    CREATE TABLE agent_knowledge_bases (
      agent_id uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      knowledge_base_id uuid NOT NULL REFERENCES knowledge_bases(id) ON DELETE CASCADE,
      organization_id uuid NOT NULL,
      attached_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent_id, knowledge_base_id)
    )`
  yield* sql`CREATE INDEX agent_knowledge_bases_base ON agent_knowledge_bases (knowledge_base_id)`
})
