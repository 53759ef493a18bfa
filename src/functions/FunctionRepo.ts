import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { FunctionId } from "../../schema/Functions.js"
import type { AgentId, OrganizationId, UserId } from "../../schema/Ids.js"
import { keyset } from "../db/Keyset.js"
import { conflictOnUnique } from "../db/UniqueViolation.js"
import type { PageRequest } from "../support/Cursor.js"

/** What a version holds: everything a call needs. */
export interface VersionFields {
  readonly name: string
  readonly description: string
  readonly input_schema: Record<string, unknown>
  readonly code: string
  readonly timeout_ms: number
  readonly memory_mb: number
}

/** A function at one version, with its current version and times. */
export interface FunctionRow extends VersionFields {
  readonly id: FunctionId
  readonly organization_id: OrganizationId
  readonly version: number
  readonly current_version: number
  readonly created_by: UserId | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface Author {
  readonly userId: UserId | null
  readonly keyId: string
}

const COLUMNS = `f.id, f.organization_id, v.version, f.current_version, v.name, v.description, v.input_schema, v.code,
  v.timeout_ms, v.memory_mb, v.created_by, f.created_at, f.updated_at`

/** Functions and their versions. A name taken in the organization answers `"name_taken"`. */
export class FunctionRepo extends Effect.Service<FunctionRepo>()("functions/FunctionRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const addVersion = (id: FunctionId, version: number, fields: VersionFields, by: Author) =>
      sql`INSERT INTO function_versions ${
        sql.insert({ function_id: id, version, ...fields, created_by: by.userId, created_by_key: by.keyId })
      }`

    const find = (organizationId: OrganizationId, id: FunctionId, version?: number) =>
      sql<FunctionRow>`
        SELECT ${sql.literal(COLUMNS)} FROM functions f
        JOIN function_versions v ON v.function_id = f.id AND v.version = ${
        version === undefined ? sql`f.current_version` : sql`${version}`
      }
        WHERE f.id = ${id} AND f.organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    /**
     * Locks the function's row until the caller's transaction ends (a change reads what it changes). A statement
     * of its own: `find`'s join, locking, would drop a row whose `current_version` moved while it waited.
     */
    const lock = (organizationId: OrganizationId, id: FunctionId) =>
      sql`SELECT id FROM functions WHERE id = ${id} AND organization_id = ${organizationId} FOR UPDATE`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /** The current version of a function of the organization (the one fact an invoke must read fresh). */
    const currentVersion = (organizationId: OrganizationId, id: FunctionId) =>
      sql<{ current_version: number }>`
        SELECT current_version FROM functions WHERE id = ${id} AND organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => row?.current_version),
        Effect.orDie
      )

    const insert = (organizationId: OrganizationId, id: FunctionId, fields: VersionFields, by: Author) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO functions ${
          sql.insert({ id, organization_id: organizationId, name: fields.name, current_version: 1 })
        }`
        yield* addVersion(id, 1, fields, by)
        return (yield* find(organizationId, id))!
      })).pipe(
        conflictOnUnique(() => Effect.fail("name_taken" as const))
      )

    /** A new version from `fields`; it becomes current. Undefined when the function is gone. */
    const update = (organizationId: OrganizationId, id: FunctionId, fields: VersionFields, by: Author) =>
      sql.withTransaction(Effect.gen(function*() {
        const [moved] = yield* sql<{ current_version: number }>`
          UPDATE functions SET current_version = current_version + 1, name = ${fields.name}, updated_at = now()
          WHERE id = ${id} AND organization_id = ${organizationId}
          RETURNING current_version`
        if (moved === undefined) return undefined
        yield* addVersion(id, moved.current_version, fields, by)
        return yield* find(organizationId, id)
      })).pipe(
        conflictOnUnique(() => Effect.fail("name_taken" as const))
      )

    const remove = (organizationId: OrganizationId, id: FunctionId) =>
      sql`DELETE FROM functions WHERE id = ${id} AND organization_id = ${organizationId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** By name; with `page`, a page of them oldest first instead (see `keyset`). */
    const list = (organizationId: OrganizationId, page?: PageRequest) => {
      const k = keyset(sql, "f", page)
      return sql<FunctionRow>`
        SELECT ${sql.literal(COLUMNS)} FROM functions f
        JOIN function_versions v ON v.function_id = f.id AND v.version = f.current_version
        WHERE f.organization_id = ${organizationId} ${k.after}
        ${page === undefined ? sql`ORDER BY f.name` : k.order} ${k.limit}`.pipe(Effect.orDie)
    }

    const count = (organizationId: OrganizationId) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM functions WHERE organization_id = ${organizationId}`
        .pipe(Effect.map(([r]) => r?.n ?? 0), Effect.orDie)

    const versions = (id: FunctionId) =>
      sql<
        Pick<FunctionRow, "version" | "name" | "description" | "timeout_ms" | "memory_mb" | "created_by" | "created_at">
      >`
        SELECT version, name, description, timeout_ms, memory_mb, created_by, created_at FROM function_versions
        WHERE function_id = ${id} ORDER BY version DESC`.pipe(Effect.orDie)

    const attach = (organizationId: OrganizationId, agentId: AgentId, id: FunctionId) =>
      sql<{ created_at: Date; inserted: boolean }>`
        INSERT INTO agent_functions (agent_id, function_id, organization_id) VALUES (${agentId}, ${id}, ${organizationId})
        ON CONFLICT (agent_id, function_id) DO UPDATE SET organization_id = EXCLUDED.organization_id
        RETURNING created_at, (xmax = 0) AS inserted`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    const detach = (organizationId: OrganizationId, agentId: AgentId, id: FunctionId) =>
      sql`
        DELETE FROM agent_functions
        WHERE agent_id = ${agentId} AND function_id = ${id} AND organization_id = ${organizationId}
        RETURNING function_id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** The functions attached to an agent, at their current versions. */
    const attached = (organizationId: OrganizationId, agentId: AgentId) =>
      sql<FunctionRow & { attached_at: Date }>`
        SELECT ${sql.literal(COLUMNS)}, a.created_at AS attached_at FROM agent_functions a
        JOIN functions f ON f.id = a.function_id
        JOIN function_versions v ON v.function_id = f.id AND v.version = f.current_version
        WHERE a.agent_id = ${agentId} AND a.organization_id = ${organizationId} ORDER BY f.name`.pipe(Effect.orDie)

    /** Who an agent's run acts as when it calls connectors (`runPrincipal`): the task's invoker, with the task's key. */
    const runIdentity = (organizationId: OrganizationId, agentId: AgentId, taskId: string) =>
      sql<{
        task_id: string | null
        invoker_user_id: UserId | null
        api_key_id: string | null
        invoker_agent_ids: Array<AgentId> | null
      }>`
        SELECT t.id AS task_id, t.invoker_user_id, t.api_key_id, t.invoker_agent_ids
        FROM agents a LEFT JOIN tasks t ON t.id = ${taskId}
        WHERE a.id = ${agentId} AND a.organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    return {
      find,
      currentVersion,
      insert,
      lock,
      update,
      remove,
      list,
      count,
      versions,
      attach,
      detach,
      attached,
      runIdentity
    } as const
  })
}) {}
