import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { AccessScope, AuthType } from "../../schema/Connectors.js"
import type { ConnectionId, ConnectorId, OrganizationId, UserId } from "../../schema/Ids.js"
import type { ImportedConnector } from "./openapi/OpenApiImport.js"

export interface ConnectorRow {
  readonly id: ConnectorId
  readonly organization_id: OrganizationId | null
  readonly name: string
  readonly description: string
  readonly imported: ImportedConnector
  readonly server_url: string | null
  readonly built_in: boolean
  readonly created_at: Date
  readonly updated_at: Date
  readonly archived_at: Date | null
}

/**
 * A connector as the catalog lists it: what its document says about servers and security, and how many
 * operations it has, without the operations themselves (each carries its input schema: megabytes in all).
 */
export interface ConnectorSummaryRow extends Omit<ConnectorRow, "imported"> {
  readonly imported: Pick<ImportedConnector, "securitySchemes" | "security" | "servers">
  readonly total_operations: number
}

export interface ConnectionRow {
  readonly id: ConnectionId
  readonly organization_id: OrganizationId
  readonly connector_id: ConnectorId
  readonly name: string
  readonly access_scope: AccessScope
  readonly owner_user_id: UserId | null
  readonly auth_type: AuthType
  readonly security_scheme: string | null
  readonly server_url: string | null
  readonly status: "active" | "pending_authorization" | "needs_reauthentication"
  readonly credentials: Uint8Array | null
  readonly key_version: number | null
  readonly created_at: Date
  readonly updated_at: Date
}

const connectionColumns = PgClient.PgClient.pipe(
  Effect.map((sql) =>
    sql`id, organization_id, connector_id, name, access_scope, owner_user_id, auth_type, security_scheme,
      server_url, status, credentials, key_version, created_at, updated_at`
  )
)

/**
 * Connectors are the organization's own or built-in (organization_id NULL); connections always belong
 * to one organization. A personal connection is visible only to its owner: `visibleTo` encodes that. A failed
 * statement is a defect.
 */
export class ConnectorRepo extends Effect.Service<ConnectorRepo>()("connectors/ConnectorRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const columns = yield* connectionColumns

    /** Connections the caller may see: organizational ones, and their own personal ones. */
    const visibleTo = (userId: UserId | null) =>
      userId === null
        ? sql`access_scope = 'organizational'`
        : sql`(access_scope = 'organizational' OR owner_user_id = ${userId})`

    const upsertBuiltIn = (
      c: { id: ConnectorId; name: string; description: string; document: unknown; imported: ImportedConnector }
    ) =>
      sql`
        INSERT INTO connectors (id, organization_id, name, description, document, imported, built_in)
        VALUES (${c.id}, NULL, ${c.name}, ${c.description}, ${JSON.stringify(c.document)}::jsonb,
                ${JSON.stringify(c.imported)}::jsonb, true)
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, description = excluded.description,
          document = excluded.document, imported = excluded.imported, updated_at = now()
        WHERE connectors.imported IS DISTINCT FROM excluded.imported`.pipe(Effect.asVoid, Effect.orDie)

    const insertConnector = (c: {
      id: ConnectorId
      organizationId: OrganizationId
      name: string
      description: string
      document: unknown
      imported: ImportedConnector
      serverUrl: string | null
      createdBy: UserId | null
    }) =>
      sql<ConnectorRow>`
        INSERT INTO connectors (id, organization_id, name, description, document, imported, server_url, created_by)
        VALUES (${c.id}, ${c.organizationId}, ${c.name}, ${c.description}, ${JSON.stringify(c.document)}::jsonb,
                ${JSON.stringify(c.imported)}::jsonb, ${c.serverUrl}, ${c.createdBy})
        RETURNING *`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    const replaceConnector = (organizationId: OrganizationId, id: ConnectorId, c: {
      name: string
      description: string
      document: unknown
      imported: ImportedConnector
      serverUrl: string | null
    }) =>
      sql<ConnectorRow>`
        UPDATE connectors SET name = ${c.name}, description = ${c.description},
          document = ${JSON.stringify(c.document)}::jsonb, imported = ${JSON.stringify(c.imported)}::jsonb,
          server_url = ${c.serverUrl}, updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId} AND archived_at IS NULL
        RETURNING *`.pipe(Effect.map(([row]) => row), Effect.orDie)

    /**
     * Archiving deletes the connector's connections too (as `deleteConnection` does: their credentials wiped),
     * in the same statement: nothing can reach them any more, and no secret should outlive its use.
     */
    const archiveConnector = (organizationId: OrganizationId, id: ConnectorId) =>
      sql<ConnectorRow & { readonly deleted_connections: ReadonlyArray<ConnectionId> }>`
        WITH archived AS (
          UPDATE connectors SET archived_at = now(), updated_at = now()
          WHERE id = ${id} AND organization_id = ${organizationId} AND archived_at IS NULL
          RETURNING *
        ), deleted AS (
          UPDATE connections SET deleted_at = now(), credentials = NULL, key_version = NULL, updated_at = now()
          WHERE organization_id = ${organizationId} AND connector_id IN (SELECT id FROM archived)
            AND deleted_at IS NULL
          RETURNING id
        )
        SELECT archived.*, ARRAY(SELECT id FROM deleted) AS deleted_connections FROM archived`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    /**
     * A connector the organization can use: its own or a built-in one, not archived. With `lock`, the row is
     * locked until the caller's transaction ends (a change reads what it changes).
     */
    const findConnector = (organizationId: OrganizationId, id: ConnectorId, lock = false) =>
      sql<ConnectorRow & { readonly document: unknown }>`
        SELECT * FROM connectors
        WHERE id = ${id} AND (organization_id = ${organizationId} OR organization_id IS NULL) AND archived_at IS NULL
        ${lock ? sql`FOR UPDATE` : sql``}`
        .pipe(Effect.map(([row]) => row), Effect.orDie)

    /** By name (case-insensitive), as a manifest names it: the organization's own before a built-in one. */
    const findConnectorIdByName = (organizationId: OrganizationId, name: string) =>
      sql<{ id: ConnectorId }>`
        SELECT id FROM connectors WHERE (organization_id = ${organizationId} OR built_in)
          AND lower(name) = lower(${name}) AND archived_at IS NULL
        ORDER BY built_in, created_at LIMIT 1`.pipe(Effect.map(([row]) => row?.id), Effect.orDie)

    /** For the Connection entity: the connector of a connection already authorized. */
    const findConnectorById = (id: ConnectorId) =>
      sql<ConnectorRow>`SELECT * FROM connectors WHERE id = ${id}`.pipe(Effect.map(([row]) => row), Effect.orDie)

    /**
     * Stores refreshed tokens and the resulting status, by connection id only (entity-side). With `read`, only
     * while the credentials are still those (sealed) it was worked out from: false when a PATCH replaced them
     * meanwhile, whose credentials and status then stand.
     */
    const storeSecret = (
      id: ConnectionId,
      credentials: { sealed: Uint8Array; keyVersion: number } | null,
      status: ConnectionRow["status"],
      read?: Uint8Array | null
    ) =>
      sql`
        UPDATE connections SET status = ${status}, updated_at = now(),
          credentials = ${credentials === null ? sql`credentials` : credentials.sealed},
          key_version = ${credentials === null ? sql`key_version` : credentials.keyVersion}
        WHERE id = ${id} AND deleted_at IS NULL
          ${read === undefined ? sql`` : sql`AND credentials IS NOT DISTINCT FROM ${read}::bytea`}
        RETURNING id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    const listConnectors = (
      organizationId: OrganizationId,
      options: { query: string | undefined; after: { name: string; id: string } | undefined; limit: number }
    ) => {
      const nameFilter = options.query === undefined || options.query === ""
        ? sql``
        : sql`AND name ILIKE ${"%" + options.query.replace(/[\\%_]/g, (c) => "\\" + c) + "%"}`
      const page = options.after === undefined
        ? sql``
        : sql`AND (lower(name), id) > (${options.after.name}, ${options.after.id}::uuid)`
      return Effect.all([
        sql<ConnectorSummaryRow>`
          SELECT id, organization_id, name, description, server_url, built_in, created_at, updated_at, archived_at,
            jsonb_build_object('securitySchemes', imported->'securitySchemes', 'security', imported->'security',
              'servers', imported->'servers') AS imported,
            jsonb_array_length(imported->'operations') AS total_operations
          FROM connectors
          WHERE (organization_id = ${organizationId} OR organization_id IS NULL) AND archived_at IS NULL
          ${nameFilter} ${page}
          ORDER BY lower(name), id LIMIT ${options.limit}`,
        sql<{ n: number }>`
          SELECT count(*)::int AS n FROM connectors
          WHERE (organization_id = ${organizationId} OR organization_id IS NULL) AND archived_at IS NULL ${nameFilter}`
          .pipe(Effect.map(([row]) => row!.n))
      ], { concurrency: 2 }).pipe(Effect.orDie)
    }

    const connectionsOf = (
      organizationId: OrganizationId,
      connectorIds: ReadonlyArray<ConnectorId>,
      userId: UserId | null
    ) =>
      connectorIds.length === 0
        ? Effect.succeed([] as ReadonlyArray<ConnectionRow>)
        : sql<ConnectionRow>`
            SELECT ${columns} FROM connections
            WHERE organization_id = ${organizationId} AND connector_id IN ${sql.in(connectorIds)}
              AND deleted_at IS NULL AND ${visibleTo(userId)}
            ORDER BY created_at, id`.pipe(Effect.orDie)

    const insertConnection = (c: Omit<ConnectionRow, "created_at" | "updated_at"> & { created_by: UserId | null }) =>
      sql<ConnectionRow>`
        INSERT INTO connections (id, organization_id, connector_id, name, access_scope, owner_user_id, auth_type,
          security_scheme, server_url, status, credentials, key_version, created_by)
        VALUES (${c.id}, ${c.organization_id}, ${c.connector_id}, ${c.name}, ${c.access_scope}, ${c.owner_user_id},
          ${c.auth_type}, ${c.security_scheme}, ${c.server_url}, ${c.status}, ${c.credentials}, ${c.key_version},
          ${c.created_by})
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    const findConnection = (organizationId: OrganizationId, id: ConnectionId, userId: UserId | null) =>
      sql<ConnectionRow>`
        SELECT ${columns} FROM connections
        WHERE id = ${id} AND organization_id = ${organizationId} AND deleted_at IS NULL AND ${visibleTo(userId)}`
        .pipe(Effect.map(([row]) => row), Effect.orDie)

    /** By name (case-insensitive) among the connector's connections the caller may see; the oldest first. */
    const findConnectionIdByName = (
      organizationId: OrganizationId,
      connectorId: ConnectorId,
      name: string,
      userId: UserId | null
    ) =>
      sql<{ id: ConnectionId }>`
        SELECT id FROM connections WHERE organization_id = ${organizationId} AND connector_id = ${connectorId}
          AND lower(name) = lower(${name}) AND deleted_at IS NULL AND ${visibleTo(userId)}
        ORDER BY created_at LIMIT 1`.pipe(Effect.map(([row]) => row?.id), Effect.orDie)

    /** For the Connection entity, which serves callers already authorized by the front end. */
    const findConnectionById = (id: ConnectionId) =>
      sql<ConnectionRow>`SELECT ${columns} FROM connections WHERE id = ${id} AND deleted_at IS NULL`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    const updateConnection = (
      organizationId: OrganizationId,
      id: ConnectionId,
      patch: {
        name?: string
        server_url?: string | null
        credentials?: { sealed: Uint8Array; keyVersion: number } | null
        auth_type?: AuthType
        security_scheme?: string | null
        status?: ConnectionRow["status"]
      }
    ) =>
      sql<ConnectionRow>`
        UPDATE connections SET
          name = ${patch.name === undefined ? sql`name` : patch.name},
          server_url = ${patch.server_url === undefined ? sql`server_url` : patch.server_url},
          auth_type = ${patch.auth_type === undefined ? sql`auth_type` : patch.auth_type},
          security_scheme = ${patch.security_scheme === undefined ? sql`security_scheme` : patch.security_scheme},
          status = ${patch.status === undefined ? sql`status` : patch.status},
          credentials = ${patch.credentials === undefined ? sql`credentials` : patch.credentials?.sealed ?? null},
          key_version = ${patch.credentials === undefined ? sql`key_version` : patch.credentials?.keyVersion ?? null},
          updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId} AND deleted_at IS NULL
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row), Effect.orDie)

    /** Deleting wipes the credentials; the row stays for the invocation history. */
    const deleteConnection = (organizationId: OrganizationId, id: ConnectionId) =>
      sql`
        UPDATE connections SET deleted_at = now(), credentials = NULL, key_version = NULL, updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId} AND deleted_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie
      )

    /** A member's personal connections in one organization, deleted as `deleteConnection` does; their ids. */
    const deletePersonalConnections = (organizationId: OrganizationId, userId: UserId) =>
      sql<{ id: ConnectionId }>`
        UPDATE connections SET deleted_at = now(), credentials = NULL, key_version = NULL, updated_at = now()
        WHERE organization_id = ${organizationId} AND owner_user_id = ${userId} AND access_scope = 'personal'
          AND deleted_at IS NULL
        RETURNING id`.pipe(Effect.map((rows) => rows.map((r) => r.id)), Effect.orDie)

    const insertAuthorization = (a: {
      stateHash: Uint8Array
      connectionId: ConnectionId
      sealed: Uint8Array
      keyVersion: number
      expiresAt: Date
    }) =>
      sql`
        INSERT INTO connection_authorizations (state_hash, connection_id, sealed, key_version, expires_at)
        VALUES (${a.stateHash}, ${a.connectionId}, ${a.sealed}, ${a.keyVersion}, ${a.expiresAt})`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const findAuthorization = (stateHash: Uint8Array) =>
      sql<
        { connection_id: ConnectionId; sealed: Uint8Array; key_version: number; expires_at: Date; used_at: Date | null }
      >`
        SELECT connection_id, sealed, key_version, expires_at, used_at FROM connection_authorizations
        WHERE state_hash = ${stateHash}`.pipe(Effect.map(([row]) => row), Effect.orDie)

    /** Single use: only the first caller gets the row. */
    const consumeAuthorization = (stateHash: Uint8Array) =>
      sql<{ connection_id: ConnectionId; sealed: Uint8Array; key_version: number }>`
        UPDATE connection_authorizations SET used_at = now()
        WHERE state_hash = ${stateHash} AND used_at IS NULL AND expires_at > now()
        RETURNING connection_id, sealed, key_version`.pipe(Effect.map(([row]) => row), Effect.orDie)

    return {
      insertAuthorization,
      findAuthorization,
      consumeAuthorization,
      upsertBuiltIn,
      insertConnector,
      replaceConnector,
      archiveConnector,
      findConnector,
      findConnectorIdByName,
      findConnectorById,
      storeSecret,
      listConnectors,
      connectionsOf,
      insertConnection,
      findConnection,
      findConnectionIdByName,
      findConnectionById,
      updateConnection,
      deleteConnection,
      deletePersonalConnections
    } as const
  })
}) {}
