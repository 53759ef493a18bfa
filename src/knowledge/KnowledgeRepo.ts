import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { Conflict } from "../../schema/Errors.js"
import type { AgentId, OrganizationId } from "../../schema/Ids.js"
import type { DocumentFormat, DocumentId, KnowledgeBaseId } from "../../schema/KnowledgeBases.js"
import { conflictOnUnique } from "../db/UniqueViolation.js"

export interface BaseRow {
  readonly id: KnowledgeBaseId
  readonly organization_id: OrganizationId
  readonly name: string
  readonly description: string
  readonly language: string
  readonly document_count: number
  readonly created_at: Date
  readonly updated_at: Date
}

export type BaseRef = Omit<BaseRow, "document_count">

export interface DocumentRow {
  readonly id: DocumentId
  /** bigint as text */
  readonly seq: string
  readonly knowledge_base_id: KnowledgeBaseId
  readonly organization_id: OrganizationId
  readonly name: string
  readonly format: DocumentFormat
  readonly size: string
  readonly source_type: "text" | "file" | "url"
  readonly source_file_id: string | null
  readonly source_url: string | null
  readonly status: "processing" | "ready" | "error"
  readonly progress: number
  readonly chunk_count: number
  readonly error_reason: string | null
  readonly error_message: string | null
  readonly replaces: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

export const nameTaken = (name: string) =>
  Conflict.of(`A knowledge base named '${name}' exists in this organization already.`, "knowledge_base_name_taken")

const DOCUMENT_COLUMNS = `id, seq::text AS seq, knowledge_base_id, organization_id, name, format, size::text AS size,
  source_type, source_file_id, source_url, status, progress, chunk_count, error_reason, error_message, replaces,
  created_at, updated_at`

const BASE_COLUMNS = `b.id, b.organization_id, b.name, b.description, b.language, b.created_at, b.updated_at,
  (SELECT count(*)::int FROM knowledge_documents d WHERE d.knowledge_base_id = b.id) AS document_count`

/**
 * Knowledge bases, their documents and agents' attachments (migration 0023). Failed statements are defects; a
 * name taken in a race is a `Conflict`.
 */
export class KnowledgeRepo extends Effect.Service<KnowledgeRepo>()("knowledge/KnowledgeRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    /** The text search configurations this server has (`english`, `simple`, …). */
    const languages = sql<{ name: string }>`SELECT cfgname AS name FROM pg_ts_config ORDER BY cfgname`.pipe(
      Effect.map((rows) => rows.map((r) => r.name)),
      Effect.orDie
    )

    /** With `lock`, the row is locked until the caller's transaction ends (a change reads what it changes). */
    const findBase = (organizationId: OrganizationId, id: KnowledgeBaseId, lock = false) =>
      sql<BaseRow>`
        SELECT ${sql.literal(BASE_COLUMNS)} FROM knowledge_bases b
        WHERE b.id = ${id} AND b.organization_id = ${organizationId} ${lock ? sql`FOR UPDATE OF b` : sql``}`.pipe(
        Effect.map(([row]): BaseRow | undefined => row),
        Effect.orDie
      )

    /** A base without its document count: what a request about its documents needs. */
    const baseRef = (organizationId: OrganizationId, id: KnowledgeBaseId) =>
      sql<BaseRef>`
        SELECT id, organization_id, name, description, language, created_at, updated_at FROM knowledge_bases
        WHERE id = ${id} AND organization_id = ${organizationId}`.pipe(
        Effect.map(([row]): BaseRef | undefined => row),
        Effect.orDie
      )

    const listBases = (organizationId: OrganizationId, after: { at: Date; id: string } | undefined, limit: number) =>
      sql<BaseRow>`
        SELECT ${sql.literal(BASE_COLUMNS)} FROM knowledge_bases b WHERE b.organization_id = ${organizationId}
        ${after === undefined ? sql`` : sql`AND (b.created_at, b.id) > (${after.at}, ${after.id}::uuid)`}
        ORDER BY b.created_at, b.id LIMIT ${limit}`.pipe(Effect.orDie)

    const insertBase = (row: {
      id: KnowledgeBaseId
      organization_id: OrganizationId
      name: string
      description: string
      language: string
      created_by: string | null
      created_by_key: string
    }) =>
      sql`
        INSERT INTO knowledge_bases (id, organization_id, name, description, language, created_by, created_by_key,
          created_at, updated_at)
        VALUES (${row.id}, ${row.organization_id}, ${row.name}, ${row.description}, ${row.language},
          ${row.created_by}, ${row.created_by_key}, date_trunc('milliseconds', now()),
          date_trunc('milliseconds', now()))`.pipe(
        Effect.zipRight(findBase(row.organization_id, row.id)),
        Effect.map((r) => r!),
        conflictOnUnique(() => nameTaken(row.name))
      )

    /** Changes a base; a new language re-indexes its chunks (their `tsv` is generated from it). */
    const updateBase = (organizationId: OrganizationId, id: KnowledgeBaseId, change: {
      name: string
      description: string
      language: string
    }) =>
      Effect.gen(function*() {
        const updated = yield* sql<{ id: string; relanguaged: boolean }>`
          UPDATE knowledge_bases b SET name = ${change.name}, description = ${change.description},
            language = ${change.language}, updated_at = date_trunc('milliseconds', now())
          FROM (SELECT language AS old FROM knowledge_bases WHERE id = ${id} FOR UPDATE) o
          WHERE b.id = ${id} AND b.organization_id = ${organizationId}
          RETURNING b.id, o.old <> b.language AS relanguaged`
        const row = updated[0]
        if (row === undefined) return undefined
        if (row.relanguaged) {
          yield* sql`
            UPDATE knowledge_chunks SET language = ${change.language}::regconfig WHERE knowledge_base_id = ${id}`
        }
        return yield* findBase(organizationId, id)
      }).pipe(conflictOnUnique(() => nameTaken(change.name)))

    const deleteBase = (organizationId: OrganizationId, id: KnowledgeBaseId) =>
      sql<{ id: string; name: string }>`
        DELETE FROM knowledge_bases WHERE id = ${id} AND organization_id = ${organizationId}
        RETURNING id, name`.pipe(Effect.map(([row]) => row), Effect.orDie)

    /**
     * A new document, its source (unless it stays in the workspace) and its place in the ingestion queue, in
     * one statement (foreign keys are checked at its end, when the document row is there).
     */
    const insertDocument = (row: {
      id: DocumentId
      knowledge_base_id: KnowledgeBaseId
      organization_id: OrganizationId
      name: string
      format: DocumentFormat
      size: number
      source_type: "text" | "file" | "url"
      source_file_id: string | null
      source_url: string | null
      replaces: DocumentId | null
      created_by: string | null
      created_by_key: string
    }, data: Uint8Array | undefined) =>
      sql<DocumentRow>`
        WITH d AS (
          INSERT INTO knowledge_documents (id, knowledge_base_id, organization_id, name, format, size, source_type,
            source_file_id, source_url, status, replaces, created_by, created_by_key, created_at, updated_at)
          VALUES (${row.id}, ${row.knowledge_base_id}, ${row.organization_id}, ${row.name}, ${row.format},
            ${row.size}, ${row.source_type}, ${row.source_file_id}, ${row.source_url}, 'processing', ${row.replaces},
            ${row.created_by}, ${row.created_by_key}, now(), now())
          RETURNING ${sql.literal(DOCUMENT_COLUMNS)}
        ),
        s AS (
          INSERT INTO knowledge_document_sources (document_id, data)
          SELECT id, ${data ?? null}::bytea FROM d WHERE ${data !== undefined}
        ),
        q AS (INSERT INTO knowledge_ingest_queue (document_id) SELECT id FROM d)
        SELECT * FROM d`.pipe(Effect.map(([doc]) => doc!), Effect.orDie)

    const findDocument = (organizationId: OrganizationId, baseId: KnowledgeBaseId, id: DocumentId) =>
      sql<DocumentRow>`
        SELECT ${sql.literal(DOCUMENT_COLUMNS)} FROM knowledge_documents
        WHERE id = ${id} AND knowledge_base_id = ${baseId} AND organization_id = ${organizationId}`.pipe(
        Effect.map(([row]): DocumentRow | undefined => row),
        Effect.orDie
      )

    const listDocuments = (baseId: KnowledgeBaseId, after: bigint | undefined, limit: number) =>
      sql<DocumentRow>`
        SELECT ${sql.literal(DOCUMENT_COLUMNS)} FROM knowledge_documents WHERE knowledge_base_id = ${baseId}
        ${after === undefined ? sql`` : sql`AND seq > ${after.toString()}::bigint`}
        ORDER BY knowledge_documents.seq LIMIT ${limit}`.pipe(Effect.orDie)

    const deleteDocument = (organizationId: OrganizationId, baseId: KnowledgeBaseId, id: DocumentId) =>
      sql<{ id: string; name: string }>`
        DELETE FROM knowledge_documents
        WHERE id = ${id} AND knowledge_base_id = ${baseId} AND organization_id = ${organizationId}
        RETURNING id, name`.pipe(Effect.map(([row]) => row), Effect.orDie)

    /** Whether an agent is a live agent of the organization. */
    const agentExists = (organizationId: OrganizationId, agentId: AgentId) =>
      sql`SELECT 1 FROM agents WHERE id = ${agentId} AND organization_id = ${organizationId} AND deleted_at IS NULL`
        .pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Attaches a base to an agent; false when it was attached already. */
    const attach = (organizationId: OrganizationId, agentId: AgentId, baseId: KnowledgeBaseId) =>
      sql`
        INSERT INTO agent_knowledge_bases (agent_id, knowledge_base_id, organization_id)
        VALUES (${agentId}, ${baseId}, ${organizationId}) ON CONFLICT DO NOTHING RETURNING 1`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const detach = (organizationId: OrganizationId, agentId: AgentId, baseId: KnowledgeBaseId) =>
      sql`
        DELETE FROM agent_knowledge_bases
        WHERE agent_id = ${agentId} AND knowledge_base_id = ${baseId} AND organization_id = ${organizationId}
        RETURNING 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** The bases an agent searches, in the order they were attached. */
    const basesOfAgent = (organizationId: OrganizationId, agentId: AgentId) =>
      sql<BaseRow>`
        SELECT ${sql.literal(BASE_COLUMNS)} FROM agent_knowledge_bases a
        JOIN knowledge_bases b ON b.id = a.knowledge_base_id
        WHERE a.agent_id = ${agentId} AND a.organization_id = ${organizationId}
        ORDER BY a.attached_at, b.id`.pipe(Effect.orDie)

    /** The agents a base is attached to (to forget their cached tool sets when it changes). */
    const agentsOfBase = (baseId: KnowledgeBaseId) =>
      sql<{ agent_id: AgentId }>`SELECT agent_id FROM agent_knowledge_bases WHERE knowledge_base_id = ${baseId}`.pipe(
        Effect.map((rows) => rows.map((r) => r.agent_id)),
        Effect.orDie
      )

    return {
      languages,
      findBase,
      baseRef,
      listBases,
      insertBase,
      updateBase,
      deleteBase,
      insertDocument,
      findDocument,
      listDocuments,
      deleteDocument,
      agentExists,
      attach,
      detach,
      basesOfAgent,
      agentsOfBase
    } as const
  })
}) {}
