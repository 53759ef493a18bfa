import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { Conflict } from "../../schema/Errors.js"
import type { FileId, FileOwner } from "../../schema/Files.js"
import type { AgentId, OrganizationId } from "../../schema/Ids.js"
import { conflictOnUnique } from "../db/UniqueViolation.js"

export interface FileRow {
  readonly id: FileId
  readonly organization_id: OrganizationId
  readonly agent_id: AgentId | null
  readonly name: string
  readonly content_type: string
  /** bigint comes back as text */
  readonly size: string
  readonly sha256: string
  readonly owner_type: FileOwner["type"]
  readonly owner_id: string
  readonly created_at: Date
}

/** Where a listing resumes: the last name and id of the page before. */
export interface FilePosition {
  readonly name: string
  readonly id: string
}

export const fileExists = (name: string) =>
  Conflict.of(
    `A file named '${name}' is in this workspace already: upload with overwrite=true to replace it.`,
    "file_exists"
  )

// the two-key advisory locks of file names: apart from the one-key locks of the cluster's shards
const NAME_LOCKS = 0x66696c65
// an organization's storage quota: its uploads finish one after the other
const QUOTA_LOCKS = 0x71756f74

// an upload a node never finished (it crashed, or lost the database) is swept after this long
const STALE_UPLOAD = "1 day"

const likePrefix = (prefix: string) => prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%"

/**
 * Workspace file metadata (migration 0018). A file is inserted `uploading`, invisible to every read here,
 * and becomes `ready` once its content is stored. Failed statements are defects; a name taken in a race is
 * a `Conflict`.
 */
export class FileRepo extends Effect.Service<FileRepo>()("files/FileRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const scopeIs = (agentId: AgentId | null) => agentId === null ? sql`agent_id IS NULL` : sql`agent_id = ${agentId}`

    /**
     * The bytes of the organization's ready files (its storage quota's measure): the total a trigger keeps
     * (migration 0043), one row rather than a sum over its files.
     */
    const usedBytes = (organizationId: OrganizationId) =>
      sql<{ used: string }>`
        SELECT coalesce((SELECT bytes FROM organization_file_bytes WHERE organization_id = ${organizationId}), 0)::text
          AS used`.pipe(Effect.map(([r]) => Number(r!.used)))

    /** A new file, not yet visible; also sweeps this organization's uploads that were never finished. */
    const begin = (f: {
      id: FileId
      organizationId: OrganizationId
      agentId: AgentId | null
      name: string
      contentType: string
      owner: FileOwner
    }) =>
      Effect.gen(function*() {
        yield* sql`
          DELETE FROM files WHERE status = 'uploading' AND created_at < now() - ${STALE_UPLOAD}::interval
            AND organization_id = ${f.organizationId}`
        yield* sql`
          INSERT INTO files (id, organization_id, agent_id, name, content_type, status, owner_type, owner_id)
          VALUES (${f.id}, ${f.organizationId}, ${f.agentId}, ${f.name}, ${f.contentType}, 'uploading',
            ${f.owner.type}, ${f.owner.id})`
      }).pipe(Effect.orDie)

    /**
     * The upload is stored: the file becomes visible (and, with `replace`, a ready file of the same name in
     * its scope is removed first). Returns the file and the id it replaced. Run in a transaction: uploads of
     * one name finish one after the other, so each replacing one sees (and replaces) the file the one before
     * it made visible rather than colliding with it.
     */
    const finish = (
      f: { id: FileId; organizationId: OrganizationId; agentId: AgentId | null; name: string },
      content: { size: number; sha256: string },
      replace: boolean,
      /** The organization's storage quota in bytes (0: none): past it, `overQuota` and nothing changed. */
      quota: number
    ) =>
      Effect.gen(function*() {
        // the quota's lock first, always: two uploads never hold the two kinds of lock in opposite orders
        if (quota > 0) yield* sql`SELECT pg_advisory_xact_lock(${QUOTA_LOCKS}, hashtext(${f.organizationId}))`
        const name = `${f.organizationId}:${f.agentId ?? ""}:${f.name}`
        yield* sql`SELECT pg_advisory_xact_lock(${NAME_LOCKS}, hashtext(${name}))`
        const replaced = replace
          ? yield* sql<{ id: FileId }>`
              DELETE FROM files WHERE organization_id = ${f.organizationId} AND ${scopeIs(f.agentId)}
                AND name = ${f.name} AND status = 'ready' RETURNING id`
          : []
        if (quota > 0) {
          // the file it replaces no longer counts (the caller's rollback puts it back)
          const used = yield* usedBytes(f.organizationId)
          if (used + content.size > quota) return { overQuota: used }
        }
        const [row] = yield* sql<FileRow>`
          UPDATE files SET status = 'ready', size = ${content.size}, sha256 = ${content.sha256}
          WHERE id = ${f.id} AND status = 'uploading' RETURNING *`
        return { row: row!, replaced: replaced[0]?.id ?? null }
      }).pipe(
        // two uploads of one name at once: the unique index decides
        conflictOnUnique(() => fileExists(f.name))
      )

    /** An upload that failed: its row and (by cascade) whatever content it wrote. */
    const discard = (id: FileId) =>
      sql`DELETE FROM files WHERE id = ${id} AND status = 'uploading'`.pipe(Effect.asVoid, Effect.orDie)

    const find = (organizationId: OrganizationId, id: FileId) =>
      sql<FileRow>`
        SELECT * FROM files WHERE id = ${id} AND organization_id = ${organizationId} AND status = 'ready'`.pipe(
        Effect.map(([row]): FileRow | undefined => row),
        Effect.orDie
      )

    const findByName = (organizationId: OrganizationId, agentId: AgentId | null, name: string) =>
      sql<FileRow>`
        SELECT * FROM files WHERE organization_id = ${organizationId} AND ${scopeIs(agentId)} AND name = ${name}
          AND status = 'ready'`.pipe(Effect.map(([row]): FileRow | undefined => row), Effect.orDie)

    /**
     * Ready files in name order (byte-wise), then id. `agents` null: every scope; otherwise the
     * organization's files and those of these agents. `agentId`: one agent's workspace only.
     */
    const list = (organizationId: OrganizationId, f: {
      agents: ReadonlyArray<AgentId> | null
      agentId?: AgentId | undefined
      prefix?: string | undefined
      after?: FilePosition | undefined
      limit: number
    }) =>
      sql<FileRow>`
        SELECT * FROM files WHERE organization_id = ${organizationId} AND status = 'ready'
        ${
        f.agents === null ? sql`` : sql`AND (agent_id IS NULL OR agent_id = ANY(${`{${f.agents.join(",")}}`}::uuid[]))`
      }
        ${f.agentId === undefined ? sql`` : sql`AND agent_id = ${f.agentId}`}
        ${
        f.prefix === undefined || f.prefix === ""
          ? sql``
          : sql`AND name >= ${f.prefix} AND name LIKE ${likePrefix(f.prefix)}`
      }
        ${f.after === undefined ? sql`` : sql`AND (name, id) > (${f.after.name}, ${f.after.id}::uuid)`}
        ORDER BY name, id LIMIT ${f.limit}`.pipe(Effect.orDie)

    const remove = (organizationId: OrganizationId, id: FileId) =>
      sql<FileRow>`
        DELETE FROM files WHERE id = ${id} AND organization_id = ${organizationId} AND status = 'ready'
        RETURNING *`.pipe(Effect.map(([row]): FileRow | undefined => row), Effect.orDie)

    /** Whether an agent is a live agent of the organization. */
    const agentExists = (organizationId: OrganizationId, agentId: AgentId) =>
      sql`SELECT 1 FROM agents WHERE id = ${agentId} AND organization_id = ${organizationId} AND deleted_at IS NULL`
        .pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    return {
      begin,
      finish,
      discard,
      find,
      findByName,
      list,
      remove,
      agentExists,
      usedBytes: (organizationId: OrganizationId) => Effect.orDie(usedBytes(organizationId))
    } as const
  })
}) {}
