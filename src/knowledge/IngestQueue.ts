import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrganizationId } from "../../schema/Ids.js"
import type { DocumentFormat, DocumentId, KnowledgeBaseId } from "../../schema/KnowledgeBases.js"
import type { Chunk } from "./Chunker.js"
import { indexedText } from "./CjkSegments.js"

/** A claimed document: what the worker needs to read and index it. */
export interface Job {
  readonly id: DocumentId
  readonly attempts: number
  readonly organization_id: OrganizationId
  readonly knowledge_base_id: KnowledgeBaseId
  readonly name: string
  readonly format: DocumentFormat
  readonly source_type: "text" | "file" | "url"
  readonly source_file_id: string | null
  /** The stored source (inline text, a fetched URL); null for a workspace file's. */
  readonly data: Uint8Array | null
}

/**
 * The ingestion queue's statements (migration 0023). A claim leases due rows for `leaseSeconds`, skipping rows
 * another node holds locked; the lease is renewed while the document is worked on, and lapses when its node
 * dies, so any node takes the document over. Failed statements are defects.
 */
export class IngestQueue extends Effect.Service<IngestQueue>()("knowledge/IngestQueue", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const claim = (count: number, leaseSeconds: number) =>
      sql<Job>`
        WITH claimed AS (
          UPDATE knowledge_ingest_queue q
          SET leased_until = now() + make_interval(secs => ${leaseSeconds}), attempts = q.attempts + 1
          WHERE q.document_id IN (
            SELECT document_id FROM knowledge_ingest_queue
            WHERE available_at <= now() AND (leased_until IS NULL OR leased_until < now())
            ORDER BY available_at LIMIT ${count}
            FOR UPDATE SKIP LOCKED)
          RETURNING q.document_id, q.attempts
        )
        SELECT d.id, c.attempts, d.organization_id, d.knowledge_base_id, d.name, d.format, d.source_type,
          d.source_file_id, s.data
        FROM claimed c JOIN knowledge_documents d ON d.id = c.document_id
        LEFT JOIN knowledge_document_sources s ON s.document_id = d.id`.pipe(
        Effect.orDie,
        Effect.withTracerEnabled(false) // polled: a root span each time; an ingestion has its own span
      )

    const renew = (ids: ReadonlyArray<DocumentId>, leaseSeconds: number) =>
      sql`
        UPDATE knowledge_ingest_queue SET leased_until = now() + make_interval(secs => ${leaseSeconds})
        WHERE document_id = ANY(${`{${ids.join(",")}}`}::uuid[])`.pipe(Effect.asVoid, Effect.orDie)

    /** Hands a document back to the queue: at once (this node stops), or after `delaySeconds` (a retry). */
    const release = (id: DocumentId, delaySeconds: number) =>
      sql`
        UPDATE knowledge_ingest_queue
        SET leased_until = NULL, available_at = now() + make_interval(secs => ${delaySeconds})
        WHERE document_id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    const progress = (id: DocumentId, fraction: number, chunks: number) =>
      sql`
        UPDATE knowledge_documents SET progress = ${fraction}, chunk_count = ${chunks}, updated_at = now()
        WHERE id = ${id} AND status = 'processing'`.pipe(Effect.asVoid, Effect.orDie)

    /** Chunks a retry would write again: an earlier attempt's are removed first. */
    const clearChunks = (id: DocumentId) =>
      sql`DELETE FROM knowledge_chunks WHERE document_id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** One batch of chunks, in the base's language; ids are made by the caller. */
    const insertChunks = (job: Job, chunks: ReadonlyArray<Chunk & { readonly id: string }>) =>
      sql`
        INSERT INTO knowledge_chunks (id, document_id, knowledge_base_id, chunk_index, heading_path, headings, text,
          search_text, language)
        SELECT r.id, ${job.id}, ${job.knowledge_base_id}, r.chunk_index, r.heading_path, r.headings, r.text,
          r.search_text, (SELECT language::regconfig FROM knowledge_bases WHERE id = ${job.knowledge_base_id})
        FROM jsonb_to_recordset(${
        JSON.stringify(chunks.map((c) => {
          // headings are only indexed, never shown: stored as indexed
          const headings = c.headingPath.join("\n")
          return {
            id: c.id,
            chunk_index: c.index,
            heading_path: c.headingPath,
            headings: indexedText(headings) ?? headings,
            text: c.text,
            search_text: indexedText(c.text) ?? null
          }
        }))
      }::jsonb) AS r(id uuid, chunk_index int, heading_path text[], headings text, text text, search_text text)`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /**
     * The document is ready (or failed): its status, and it leaves the queue with its stored source; once ready,
     * the document it replaces is deleted (one statement, so search always answers from one of the two).
     */
    const finish = (
      id: DocumentId,
      outcome:
        | { readonly status: "ready"; readonly chunks: number }
        | { readonly status: "error"; readonly reason: string; readonly message: string }
    ) =>
      (outcome.status === "ready"
        ? sql`
          WITH d AS (
            UPDATE knowledge_documents SET status = 'ready', progress = 1, chunk_count = ${outcome.chunks},
              updated_at = now()
            WHERE id = ${id} AND status = 'processing'
            RETURNING replaces, knowledge_base_id
          ),
          r AS (
            DELETE FROM knowledge_documents o USING d
            WHERE o.id = d.replaces AND o.knowledge_base_id = d.knowledge_base_id
          ),
          s AS (DELETE FROM knowledge_document_sources WHERE document_id = ${id})
          DELETE FROM knowledge_ingest_queue WHERE document_id = ${id}`
        : sql`
          WITH c AS (DELETE FROM knowledge_chunks WHERE document_id = ${id}),
          d AS (
            UPDATE knowledge_documents SET status = 'error', chunk_count = 0, error_reason = ${outcome.reason},
              error_message = ${outcome.message}, updated_at = now()
            WHERE id = ${id} AND status = 'processing'
          ),
          s AS (DELETE FROM knowledge_document_sources WHERE document_id = ${id})
          DELETE FROM knowledge_ingest_queue WHERE document_id = ${id}`).pipe(Effect.asVoid, Effect.orDie)

    /** Whether a document is still queued (it is not when it was deleted while being worked on). */
    const queued = (id: DocumentId) =>
      sql`SELECT 1 FROM knowledge_ingest_queue WHERE document_id = ${id}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    return { claim, renew, queued, release, progress, clearChunks, insertChunks, finish } as const
  })
}) {}
