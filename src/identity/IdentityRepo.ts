import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import {
  ApiKey,
  type ApiKeyKind,
  Member,
  Organization,
  Role,
  roleAtLeast,
  roleDisplayName,
  User
} from "../../schema/Identity.js"
import type { AgentId, ApiKeyId, OrganizationId, UserId } from "../../schema/Ids.js"
import { groupAgentsOf } from "../access/GroupAgents.js"
import { keyset } from "../db/Keyset.js"
import type { PageRequest } from "../support/Cursor.js"

interface ApiKeyRow {
  readonly id: ApiKeyId
  readonly organization_id: OrganizationId
  readonly kind: ApiKeyKind
  readonly name: string
  readonly role: Role
  readonly user_id: UserId | null
  readonly agent_ids: ReadonlyArray<AgentId> | null
  readonly secret_hash: Uint8Array
  readonly created_at: Date
  readonly last_used_at: Date | null
  readonly revoked_at: Date | null
  /** The member who created it; for a key an organization key created, that key's own creator. */
  readonly created_by: UserId | null
}

export type StoredApiKey = ApiKeyRow

export const toApiKey = (row: ApiKeyRow) =>
  new ApiKey({
    id: row.id,
    kind: row.kind,
    name: row.name,
    prefix: `sy_${row.id}_`,
    role: row.role,
    user_id: row.user_id,
    agent_ids: row.agent_ids,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at
  })

interface MemberRow {
  readonly id: UserId
  readonly email: string
  readonly name: string | null
  readonly role: Role
  readonly created_at: Date
}

export const toMember = (row: MemberRow) =>
  new Member({
    user: new User({ id: row.id, email: row.email, name: row.name }),
    role: row.role,
    role_display: roleDisplayName[row.role],
    created_at: row.created_at
  })

// serializes first-start bootstrap across nodes starting at once
const BOOTSTRAP_LOCK = 0x5717c4_02

/**
 * Every query that reads tenant data takes the organization id: no cross-organization reads. A failed statement
 * is a defect.
 */
export class IdentityRepo extends Effect.Service<IdentityRepo>()("identity/IdentityRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const insertOrganization = (id: OrganizationId, name: string) =>
      sql<{ id: OrganizationId; name: string; created_at: Date }>`
        INSERT INTO organizations (id, name) VALUES (${id}, ${name}) RETURNING id, name, created_at`.pipe(
        Effect.map(([row]) => new Organization(row!)),
        Effect.orDie
      )

    const countOrganizations = sql<{ n: number }>`SELECT count(*)::int AS n FROM organizations`.pipe(
      Effect.map(([row]) => row!.n),
      Effect.orDie
    )

    /**
     * The user with this e-mail (case-insensitive), created when new. `DO UPDATE` (a no-op) rather than
     * `DO NOTHING`: it waits for a concurrent insert of the same address and returns that row, which a
     * read in the same statement would not see.
     */
    const upsertUser = (id: UserId, email: string, name: string | null) =>
      sql<{ id: UserId; email: string; name: string | null }>`
        INSERT INTO users (id, email, name) VALUES (${id}, ${email}, ${name})
        ON CONFLICT (lower(email)) DO UPDATE SET email = users.email
        RETURNING id, email, name`.pipe(Effect.map(([row]) => new User(row!)), Effect.orDie)

    /** `false` when the user already belongs to the organization. */
    const insertMembership = (organizationId: OrganizationId, userId: UserId, role: Role) =>
      sql`
        INSERT INTO memberships (organization_id, user_id, role) VALUES (${organizationId}, ${userId}, ${role})
        ON CONFLICT DO NOTHING RETURNING user_id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    const findMember = (organizationId: OrganizationId, userId: UserId) =>
      sql<MemberRow>`
        SELECT u.id, u.email, u.name, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = ${organizationId} AND m.user_id = ${userId}`.pipe(
        Effect.map(([row]) => row === undefined ? undefined : toMember(row)),
        Effect.orDie
      )

    /** By joining, then e-mail; with `page`, a page of them oldest first by `(created_at, user id)` instead. */
    const listMembers = (organizationId: OrganizationId, page?: PageRequest) => {
      const k = keyset(sql, "m", page, { id: "user_id" })
      return sql<MemberRow>`
        SELECT u.id, u.email, u.name, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = ${organizationId} ${k.after}
        ${page === undefined ? sql`ORDER BY m.created_at, u.email` : k.order} ${k.limit}`.pipe(Effect.orDie)
    }

    const countMembers = (organizationId: OrganizationId) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM memberships WHERE organization_id = ${organizationId}`
        .pipe(Effect.map(([r]) => r?.n ?? 0), Effect.orDie)

    const insertApiKey = (key: {
      readonly id: ApiKeyId
      readonly organizationId: OrganizationId
      readonly kind: ApiKeyKind
      readonly name: string
      readonly role: Role
      readonly userId: UserId | null
      readonly agentIds: ReadonlyArray<AgentId> | null
      readonly hash: Uint8Array
      readonly createdBy: UserId | null
    }) =>
      sql<ApiKeyRow>`
        INSERT INTO api_keys (id, organization_id, kind, name, role, user_id, agent_ids, secret_hash, created_by)
        VALUES (${key.id}, ${key.organizationId}, ${key.kind}, ${key.name}, ${key.role}, ${key.userId},
                ${key.agentIds === null ? null : JSON.stringify(key.agentIds)}::jsonb, ${key.hash}, ${key.createdBy})
        RETURNING *`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    /** Lookup for authentication: by key id only, since the key itself names its organization. */
    const findApiKeyForAuth = (id: ApiKeyId) =>
      sql<ApiKeyRow & { member_role: Role | null; group_agents: ReadonlyArray<AgentId> | null }>`
        SELECT k.*, m.role AS member_role, ${groupAgentsOf(sql, sql`k.organization_id`, sql`k.user_id`)} AS group_agents
        FROM api_keys k
        LEFT JOIN memberships m ON m.organization_id = k.organization_id AND m.user_id = k.user_id
        WHERE k.id = ${id}`.pipe(Effect.map(([row]) => row), Effect.orDie)

    const findApiKey = (organizationId: OrganizationId, id: ApiKeyId) =>
      sql<ApiKeyRow>`SELECT * FROM api_keys WHERE organization_id = ${organizationId} AND id = ${id}`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    const keysListed = (organizationId: OrganizationId, onlyUser: UserId | null) =>
      sql`k.organization_id = ${organizationId} ${onlyUser === null ? sql`` : sql`AND k.user_id = ${onlyUser}`}`

    /** Newest first; with `page`, a page of them oldest first instead (see `keyset`). */
    const listApiKeys = (organizationId: OrganizationId, onlyUser: UserId | null, page?: PageRequest) => {
      const k = keyset(sql, "k", page, { textId: true })
      return sql<ApiKeyRow>`
        SELECT k.* FROM api_keys k WHERE ${keysListed(organizationId, onlyUser)} ${k.after}
        ${page === undefined ? sql`ORDER BY k.created_at DESC, k.id` : k.order} ${k.limit}`.pipe(Effect.orDie)
    }

    const countApiKeys = (organizationId: OrganizationId, onlyUser: UserId | null) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys k WHERE ${keysListed(organizationId, onlyUser)}`
        .pipe(Effect.map(([r]) => r?.n ?? 0), Effect.orDie)

    const revokeApiKey = (organizationId: OrganizationId, id: ApiKeyId) =>
      sql<ApiKeyRow>`
        UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
        WHERE organization_id = ${organizationId} AND id = ${id} RETURNING *`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    /** The caller as `/v1/me` shows it, in one round trip. */
    const findCaller = (organizationId: OrganizationId, keyId: ApiKeyId) =>
      sql<ApiKeyRow & { org_name: string; org_created_at: Date; user_email: string | null; user_name: string | null }>`
        SELECT k.*, o.name AS org_name, o.created_at AS org_created_at, u.email AS user_email, u.name AS user_name
        FROM api_keys k JOIN organizations o ON o.id = k.organization_id LEFT JOIN users u ON u.id = k.user_id
        WHERE k.organization_id = ${organizationId} AND k.id = ${keyId}`.pipe(
        Effect.map(([row]) =>
          row === undefined ? undefined : {
            organization: new Organization({
              id: row.organization_id,
              name: row.org_name,
              created_at: row.org_created_at
            }),
            user: row.user_id === null
              ? null
              : new User({ id: row.user_id, email: row.user_email!, name: row.user_name }),
            key: toApiKey(row)
          }
        ),
        Effect.orDie
      )

    /** A console session's caller: the organization and the member (no API key row: see consoleKeyId). */
    const findSessionCaller = (organizationId: OrganizationId, userId: UserId) =>
      sql<{ org_name: string; org_created_at: Date; email: string; name: string | null; created_at: Date }>`
        SELECT o.name AS org_name, o.created_at AS org_created_at, u.email, u.name, m.created_at
        FROM memberships m JOIN organizations o ON o.id = m.organization_id JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = ${organizationId} AND m.user_id = ${userId}`.pipe(
        Effect.map(([row]) =>
          row === undefined ? undefined : {
            organization: new Organization({ id: organizationId, name: row.org_name, created_at: row.org_created_at }),
            user: new User({ id: userId, email: row.email, name: row.name }),
            memberSince: row.created_at
          }
        ),
        Effect.orDie
      )

    /**
     * Serializes role changes in an organization (keeps it from losing its last Super admin in a race), and
     * changes of its settings that may have no row to lock yet (model providers, single sign-on).
     */
    const lockOrganization = (organizationId: OrganizationId) =>
      sql`SELECT id FROM organizations WHERE id = ${organizationId} FOR NO KEY UPDATE`.pipe(Effect.asVoid, Effect.orDie)

    /** Serializes first-start bootstrap across nodes starting at once, until the transaction ends. */
    const lockBootstrap = sql`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`.pipe(Effect.asVoid, Effect.orDie)

    const countSuperAdmins = (organizationId: OrganizationId) =>
      sql<{ n: number }>`
        SELECT count(*)::int AS n FROM memberships WHERE organization_id = ${organizationId} AND role = 'super_admin'`
        .pipe(Effect.map(([row]) => row!.n), Effect.orDie)

    const updateMembershipRole = (organizationId: OrganizationId, userId: UserId, role: Role) =>
      sql`
        UPDATE memberships SET role = ${role} WHERE organization_id = ${organizationId} AND user_id = ${userId}
        RETURNING user_id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** Leaves the organization (and, by cascade, its groups). */
    const deleteMembership = (organizationId: OrganizationId, userId: UserId) =>
      sql`DELETE FROM memberships WHERE organization_id = ${organizationId} AND user_id = ${userId} RETURNING user_id`
        .pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** Revokes a user's personal keys in one organization; their ids. */
    const revokePersonalKeys = (organizationId: OrganizationId, userId: UserId) =>
      sql<{ id: ApiKeyId }>`
        UPDATE api_keys SET revoked_at = now()
        WHERE organization_id = ${organizationId} AND user_id = ${userId} AND revoked_at IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.map((r) => r.id)),
        Effect.orDie
      )

    /** Organization keys a member created with a role above `role` get `role`: a key is never above its creator. */
    const lowerCreatedKeys = (organizationId: OrganizationId, userId: UserId, role: Role) => {
      const above = Role.literals.filter((r) => !roleAtLeast(role, r))
      return above.length === 0 ? Effect.succeed([]) : sql<{ id: ApiKeyId }>`
        UPDATE api_keys SET role = ${role}
        WHERE organization_id = ${organizationId} AND created_by = ${userId} AND kind = 'organization'
          AND revoked_at IS NULL AND role IN ${sql.in(above)} RETURNING id`.pipe(
        Effect.map((rows) => rows.map((r) => r.id)),
        Effect.orDie
      )
    }

    const touchApiKey = (id: ApiKeyId) =>
      sql`UPDATE api_keys SET last_used_at = now() WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    return {
      insertOrganization,
      countOrganizations,
      upsertUser,
      insertMembership,
      findMember,
      listMembers,
      countMembers,
      insertApiKey,
      findApiKeyForAuth,
      findApiKey,
      listApiKeys,
      countApiKeys,
      revokeApiKey,
      touchApiKey,
      findCaller,
      findSessionCaller,
      lockOrganization,
      lockBootstrap,
      countSuperAdmins,
      updateMembershipRole,
      deleteMembership,
      revokePersonalKeys,
      lowerCreatedKeys
    } as const
  })
}) {}
