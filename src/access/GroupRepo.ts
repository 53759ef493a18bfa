import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Group, type GroupId } from "../../schema/Access.js"
import { Conflict } from "../../schema/Errors.js"
import { type Role } from "../../schema/Identity.js"
import type { AgentId, OrganizationId, UserId } from "../../schema/Ids.js"
import { conflictOnUnique } from "../db/UniqueViolation.js"
import type { Position } from "../support/Cursor.js"

export interface GroupRow {
  readonly id: GroupId
  readonly organization_id: OrganizationId
  readonly name: string
  readonly description: string
  readonly default_role: Role | null
  readonly agent_ids: ReadonlyArray<AgentId>
  readonly member_count: number
  readonly created_at: Date
  readonly updated_at: Date
}

export interface GroupFields {
  readonly name: string
  readonly description: string
  readonly default_role: Role | null
  readonly agent_ids: ReadonlyArray<AgentId>
}

export const toGroup = (row: GroupRow) =>
  new Group({
    id: row.id,
    name: row.name,
    description: row.description,
    default_role: row.default_role,
    agent_ids: row.agent_ids,
    member_count: row.member_count,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

export const groupNameTaken = (name: string) =>
  Conflict.of(`A group named '${name}' already exists in this organization.`, "group_name_taken")

/**
 * Groups and their members; every query is scoped to one organization. Storage errors end here: a taken name
 * is a `Conflict`, anything else a defect.
 */
export class GroupRepo extends Effect.Service<GroupRepo>()("access/GroupRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`
      g.id, g.organization_id, g.name, g.description, g.default_role, g.agent_ids, g.created_at, g.updated_at,
      (SELECT count(*)::int FROM group_members gm WHERE gm.group_id = g.id) AS member_count`

    /** With `lock`, the row is locked until the caller's transaction ends (a change reads what it changes). */
    const find = (organizationId: OrganizationId, id: GroupId, lock = false) =>
      sql<GroupRow>`
        SELECT ${columns} FROM groups g WHERE g.organization_id = ${organizationId} AND g.id = ${id}
        ${lock ? sql`FOR UPDATE OF g` : sql``}`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie
      )

    /** Oldest first. */
    const list = (organizationId: OrganizationId, after: Position | undefined, limit: number) =>
      sql<GroupRow>`
        SELECT ${columns} FROM groups g WHERE g.organization_id = ${organizationId}
        ${after === undefined ? sql`` : sql`AND (g.created_at, g.id) > (${after.at}, ${after.id}::uuid)`}
        ORDER BY g.created_at, g.id LIMIT ${limit}`.pipe(Effect.orDie)

    /** `undefined` when the name is taken. */
    const insert = (organizationId: OrganizationId, id: GroupId, fields: GroupFields, createdBy: UserId | null) =>
      sql<{ id: GroupId }>`
        INSERT INTO groups (id, organization_id, name, description, default_role, agent_ids, created_by)
        VALUES (${id}, ${organizationId}, ${fields.name}, ${fields.description}, ${fields.default_role},
                ${JSON.stringify(fields.agent_ids)}::jsonb, ${createdBy})
        ON CONFLICT DO NOTHING RETURNING id`.pipe(
        Effect.orDie,
        Effect.flatMap(([row]) => row === undefined ? Effect.succeed(undefined) : find(organizationId, id))
      )

    /** `undefined` when there is no such group; a `Conflict` when the new name is taken. */
    const update = (organizationId: OrganizationId, id: GroupId, fields: GroupFields) =>
      sql`
        UPDATE groups SET name = ${fields.name}, description = ${fields.description},
          default_role = ${fields.default_role}, agent_ids = ${JSON.stringify(fields.agent_ids)}::jsonb,
          updated_at = now()
        WHERE organization_id = ${organizationId} AND id = ${id} RETURNING id`.pipe(
        conflictOnUnique(() => groupNameTaken(fields.name)),
        Effect.flatMap(([row]) => row === undefined ? Effect.succeed(undefined) : find(organizationId, id))
      )

    const remove = (organizationId: OrganizationId, id: GroupId) =>
      sql`DELETE FROM groups WHERE organization_id = ${organizationId} AND id = ${id} RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie
      )

    /** The ids among `ids` that are live agents of the organization. */
    const existingAgents = (organizationId: OrganizationId, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : sql<{ id: string }>`
          SELECT id::text AS id FROM agents
          WHERE organization_id = ${organizationId} AND deleted_at IS NULL AND id::text IN ${sql.in(ids)}`.pipe(
          Effect.map((rows) => new Set(rows.map((r) => r.id))),
          Effect.orDie
        )

    /** `false` when already in the group. */
    const addMember = (organizationId: OrganizationId, groupId: GroupId, userId: UserId) =>
      sql`
        INSERT INTO group_members (group_id, organization_id, user_id) VALUES (${groupId}, ${organizationId}, ${userId})
        ON CONFLICT DO NOTHING RETURNING user_id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    const removeMember = (organizationId: OrganizationId, groupId: GroupId, userId: UserId) =>
      sql`
        DELETE FROM group_members
        WHERE organization_id = ${organizationId} AND group_id = ${groupId} AND user_id = ${userId}
        RETURNING user_id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** Members of a group, in the order they were added. */
    const members = (organizationId: OrganizationId, groupId: GroupId, after: Position | undefined, limit: number) =>
      sql<{ id: UserId; email: string; name: string | null; role: Role; created_at: Date; added_at: Date }>`
        SELECT u.id, u.email, u.name, m.role, m.created_at, gm.added_at
        FROM group_members gm
        JOIN memberships m ON m.organization_id = gm.organization_id AND m.user_id = gm.user_id
        JOIN users u ON u.id = gm.user_id
        WHERE gm.organization_id = ${organizationId} AND gm.group_id = ${groupId}
        ${after === undefined ? sql`` : sql`AND (gm.added_at, gm.user_id) > (${after.at}, ${after.id}::uuid)`}
        ORDER BY gm.added_at, gm.user_id LIMIT ${limit}`.pipe(Effect.orDie)

    return { find, list, insert, update, remove, existingAgents, addMember, removeMember, members } as const
  })
}) {}
