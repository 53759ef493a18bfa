import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { Conflict } from "../../schema/Errors.js"
import type { AgentId, OrganizationId, TaskId, UserId } from "../../schema/Ids.js"
import type { SkillAction, SkillId, SkillStatus, SkillVisibility, VisibilityMode } from "../../schema/Skills.js"
import { conflictOnUnique } from "../db/UniqueViolation.js"

export interface SkillRow {
  readonly id: SkillId
  readonly organization_id: OrganizationId
  readonly name: string
  readonly description: string
  readonly owner_id: UserId | null
  readonly visibility: SkillVisibility
  readonly allowlist: ReadonlyArray<string>
  readonly status: SkillStatus
  readonly version: number
  readonly actions: ReadonlyArray<SkillAction>
  readonly created_at: Date
  readonly updated_at: Date
  readonly published_at: Date | null
}

export interface AttachmentRow extends SkillRow {
  readonly attached_at: Date
}

export interface ViolationRow {
  readonly id: string
  readonly skill_id: string
  readonly agent_id: string
  readonly task_id: string | null
  readonly kind: "attach" | "use"
  readonly tool: string | null
  readonly mode: VisibilityMode
  readonly at: Date
}

/** A PostgreSQL array literal of UUIDs (checked as UUIDs before they get here). */
const uuidArray = (ids: ReadonlyArray<string>) => `{${ids.join(",")}}`

export const skillNameTaken = (name: string) =>
  Conflict.of(`A skill named '${name}' exists already; skill names are unique in an organization.`, "skill_name_taken")

/** Skills, their attachments and violations. A name taken in a race is a `Conflict`; other failures are defects. */
export class SkillRepo extends Effect.Service<SkillRepo>()("skills/SkillRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const insert = (s: {
      id: SkillId
      organization_id: OrganizationId
      name: string
      description: string
      owner_id: UserId | null
      visibility: SkillVisibility
      allowlist: ReadonlyArray<string>
      status: SkillStatus
      actions: ReadonlyArray<SkillAction>
    }) =>
      sql<SkillRow>`
        WITH skill AS (
          INSERT INTO skills (id, organization_id, name, description, owner_id, visibility, allowlist, status, actions,
            published_at)
          VALUES (${s.id}, ${s.organization_id}, ${s.name}, ${s.description}, ${s.owner_id}, ${s.visibility},
            ${uuidArray(s.allowlist)}::uuid[], ${s.status}, ${JSON.stringify(s.actions)}::jsonb,
            ${s.status === "published" ? sql`now()` : null})
          RETURNING *
        ),
        version AS (
          INSERT INTO skill_versions (skill_id, version, name, description, actions, created_by)
          SELECT id, 1, name, description, actions, owner_id FROM skill
        )
        SELECT * FROM skill`.pipe(
        Effect.map(([row]) => row!),
        // two creations of one name at once: the unique index decides
        conflictOnUnique(() => skillNameTaken(s.name))
      )

    /** With `lock`, the row is locked until the caller's transaction ends (a change reads what it changes). */
    const find = (organizationId: OrganizationId, id: string, lock = false) =>
      sql<SkillRow>`
        SELECT * FROM skills WHERE id = ${id}::uuid AND organization_id = ${organizationId}
        ${lock ? sql`FOR UPDATE` : sql``}`.pipe(
        Effect.map(([row]): SkillRow | undefined => row),
        Effect.orDie
      )

    const findByName = (organizationId: OrganizationId, name: string) =>
      sql<SkillRow>`
        SELECT * FROM skills WHERE organization_id = ${organizationId} AND lower(name) = lower(${name})
          AND status <> 'archived'`.pipe(Effect.map(([row]): SkillRow | undefined => row), Effect.orDie)

    /**
     * Skills a caller may see, newest first: with `viewer` "all", all of the organization's; otherwise the
     * published catalog (visibility `organization`), the viewer's own, and skills scoped to agents they
     * created (a viewer of null, an organization key, has no skills of its own: the catalog).
     */
    const list = (organizationId: OrganizationId, f: {
      viewer: UserId | null | "all"
      status?: SkillStatus | undefined
      after?: { at: Date; id: string } | undefined
      limit: number
    }) =>
      sql<SkillRow>`
        SELECT * FROM skills s WHERE organization_id = ${organizationId}
        ${
        f.viewer === "all" ? sql`` : sql`AND (
          (s.visibility = 'organization' AND s.status = 'published')
          OR s.owner_id = ${f.viewer}
          OR EXISTS (
            SELECT 1 FROM agents a WHERE a.id = ANY(s.allowlist) AND a.created_by = ${f.viewer} AND a.deleted_at IS NULL
          )
        )`
      }
        ${f.status === undefined ? sql`` : sql`AND s.status = ${f.status}`}
        ${f.after === undefined ? sql`` : sql`AND (s.created_at, s.id) < (${f.after.at}, ${f.after.id}::uuid)`}
        ORDER BY s.created_at DESC, s.id DESC LIMIT ${f.limit}`.pipe(Effect.orDie)

    /** A new version: name, description or actions changed. */
    const updateContent = (
      organizationId: OrganizationId,
      id: SkillId,
      c: { name: string; description: string; actions: ReadonlyArray<SkillAction> },
      by: UserId | null
    ) =>
      sql<SkillRow>`
        WITH skill AS (
          UPDATE skills SET name = ${c.name}, description = ${c.description}, actions = ${
        JSON.stringify(c.actions)
      }::jsonb,
            version = version + 1, updated_at = now()
          WHERE id = ${id} AND organization_id = ${organizationId}
          RETURNING *
        ),
        version AS (
          INSERT INTO skill_versions (skill_id, version, name, description, actions, created_by)
          SELECT id, version, name, description, actions, ${by}::uuid FROM skill
        )
        SELECT * FROM skill`.pipe(
        Effect.map(([row]): SkillRow | undefined => row),
        conflictOnUnique(() => skillNameTaken(c.name))
      )

    const setAccess = (
      organizationId: OrganizationId,
      id: SkillId,
      visibility: SkillVisibility,
      allowlist: ReadonlyArray<string>
    ) =>
      sql<SkillRow>`
        UPDATE skills SET visibility = ${visibility}, allowlist = ${uuidArray(allowlist)}::uuid[], updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId} RETURNING *`.pipe(
        Effect.map(([row]): SkillRow | undefined => row),
        Effect.orDie
      )

    const setStatus = (organizationId: OrganizationId, id: SkillId, status: SkillStatus) =>
      sql<SkillRow>`
        UPDATE skills SET status = ${status}, updated_at = now(),
          published_at = CASE WHEN ${status} = 'published' THEN coalesce(published_at, now()) ELSE published_at END
        WHERE id = ${id} AND organization_id = ${organizationId} RETURNING *`.pipe(
        Effect.map(([row]): SkillRow | undefined => row),
        Effect.orDie
      )

    /** Whether `userId` created one of these agents. */
    const managesAny = (userId: UserId, agentIds: ReadonlyArray<string>) =>
      sql<{ n: number }>`
        SELECT count(*)::int AS n FROM agents
        WHERE id = ANY(${uuidArray(agentIds)}::uuid[]) AND created_by = ${userId} AND deleted_at IS NULL`.pipe(
        Effect.map(([row]) => (row?.n ?? 0) > 0),
        Effect.orDie
      )

    /** Adds the skill to the agent (if not there yet); when it was added, as the agent's skills list it. */
    /** Adds the skill to the agent if it is not there yet: when it was added, and whether by this call. */
    const attach = (agentId: AgentId, skillId: SkillId, by: UserId | null) =>
      // the no-op update returns the row there is, also one another request committed while this one waited;
      // xmax is 0 only in a row this statement inserted
      sql<{ attached_at: Date; inserted: boolean }>`
        INSERT INTO agent_skills (agent_id, skill_id, attached_by) VALUES (${agentId}, ${skillId}, ${by})
        ON CONFLICT (agent_id, skill_id) DO UPDATE SET attached_at = agent_skills.attached_at
        RETURNING attached_at, (xmax = 0) AS inserted`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie
      )

    const detach = (agentId: AgentId, skillId: SkillId) =>
      sql<{ skill_id: string }>`
        DELETE FROM agent_skills WHERE agent_id = ${agentId} AND skill_id = ${skillId} RETURNING skill_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The skills attached to an agent, as they are now. */
    const attachedTo = (agentId: string) =>
      sql<AttachmentRow>`
        SELECT s.*, a.attached_at FROM agent_skills a JOIN skills s ON s.id = a.skill_id
        WHERE a.agent_id = ${agentId}::uuid ORDER BY a.attached_at, s.id`.pipe(Effect.orDie)

    const recordViolation = (v: {
      organizationId: OrganizationId
      skillId: string
      agentId: string
      taskId: TaskId | null
      kind: "attach" | "use"
      tool: string | null
      mode: VisibilityMode
      actor: unknown
    }) =>
      sql`
        INSERT INTO skill_violations (organization_id, skill_id, agent_id, task_id, kind, tool, mode, actor)
        VALUES (${v.organizationId}, ${v.skillId}::uuid, ${v.agentId}::uuid, ${v.taskId}, ${v.kind}, ${v.tool},
          ${v.mode}, ${JSON.stringify(v.actor)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie)

    const violations = (organizationId: OrganizationId, f: {
      skillId?: string | undefined
      agentId?: string | undefined
      before?: string | undefined
      limit: number
    }) =>
      sql<ViolationRow>`
        SELECT id::text, skill_id, agent_id, task_id, kind, tool, mode, at FROM skill_violations
        WHERE organization_id = ${organizationId}
        ${f.skillId === undefined ? sql`` : sql`AND skill_id = ${f.skillId}::uuid`}
        ${f.agentId === undefined ? sql`` : sql`AND agent_id = ${f.agentId}::uuid`}
        ${f.before === undefined ? sql`` : sql`AND id < ${f.before}::bigint`}
        ORDER BY id DESC LIMIT ${f.limit}`.pipe(Effect.orDie)

    return {
      insert,
      find,
      findByName,
      list,
      updateContent,
      setAccess,
      setStatus,
      managesAny,
      attach,
      detach,
      attachedTo,
      recordViolation,
      violations
    } as const
  })
}) {}
