import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { BadRequest, Forbidden, NotFound } from "../../schema/Errors.js"
import type { FunctionId } from "../../schema/Functions.js"
import type { AgentId, ConnectionId } from "../../schema/Ids.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import {
  AttachedSkill,
  type CreateSkill,
  isFunctionAction,
  Skill,
  type SkillAccess,
  type SkillAction,
  type SkillId,
  type SkillStatus,
  type UpdateSkill,
  type VisibilityMode
} from "../../schema/Skills.js"
import { AgentRepo, type AgentRow } from "../agents/AgentRepo.js"
import { actorOf, AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Connections } from "../connectors/Connections.js"
import { transactionIn } from "../db/Transaction.js"
import { FunctionRepo } from "../functions/FunctionRepo.js"
import { requireOrganizationKey, requirePermission } from "../identity/IdentityPolicy.js"
import { pageOf, positionOf } from "../support/Cursor.js"
import { invalidField } from "../support/Issues.js"
import { sameList } from "../support/Lists.js"
import { isUuid } from "../support/Uuid.js"
import { skillNameTaken, SkillRepo, type SkillRow } from "./SkillRepo.js"

/** What the runtime filter needs of an attached skill (a read of its own, or the run's start statement). */
export type AttachedRow = Pick<SkillRow, "id" | "status" | "visibility" | "owner_id" | "allowlist" | "actions">

export const toSkill = (row: SkillRow) =>
  new Skill({
    id: row.id,
    name: row.name,
    description: row.description,
    owner_id: row.owner_id,
    visibility: row.visibility,
    allowlist: row.allowlist,
    status: row.status,
    version: row.version,
    actions: row.actions,
    created_at: row.created_at,
    updated_at: row.updated_at,
    published_at: row.published_at
  })

/** Whether a skill's visibility admits an agent (the mode decides what follows from a "no"). */
export const admits = (skill: Pick<SkillRow, "visibility" | "owner_id" | "allowlist">, agent: AgentRow) =>
  skill.visibility === "organization" ||
  (skill.visibility === "private" && skill.owner_id !== null && agent.created_by === skill.owner_id) ||
  (skill.visibility === "restricted" && skill.allowlist.includes(agent.id))

/** One tool an agent's run may use, from its own skills or an attached one. */
/** What a tool runs: an operation of a connection, or a custom function. */
export type SkillTarget =
  | { readonly kind: "operation"; readonly connectionId: ConnectionId; readonly operationRef: string }
  | { readonly kind: "function"; readonly functionId: FunctionId }

const targetOf = (a: SkillAction): SkillTarget =>
  isFunctionAction(a)
    ? { kind: "function", functionId: a.function_id }
    : { kind: "operation", connectionId: a.connection_id, operationRef: a.operation_id }

export interface SkillTool {
  readonly target: SkillTarget
  readonly requiresApproval: boolean
  readonly approvalCondition: SkillAction["approval_condition"]
  /** The attached skill it comes from (null: the agent's own `skills`). */
  readonly skillId: SkillId | null
  /** Used under `report` although the skill's visibility does not admit the agent: each use is recorded. */
  readonly violation: boolean
}

/**
 * Skills: named, versioned bundles of connector actions, with a visibility (who may hold them), a status
 * (only published ones run) and per-action approval. Builders create them, Admins publish them, the
 * owner or an Admin changes who may use them.
 */
export class Skills extends Effect.Service<Skills>()("skills/Skills", {
  effect: Effect.gen(function*() {
    const repo = yield* SkillRepo
    const agents = yield* AgentRepo
    const connections = yield* Connections
    const functions = yield* FunctionRepo
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    // SERVICE_SKILL_VISIBILITY_MODE, checked with the other settings before the node starts
    const mode: VisibilityMode = (yield* SwitchyardConfig).skillVisibilityMode

    const isAdmin = (p: Principal) => holds(p.role, Policy.manageEverySkill)

    // Admins see every skill; others the published catalog, their own, and skills scoped to agents they created
    const mayView = (p: Principal, row: SkillRow) =>
      isAdmin(p) || (p.userId !== null && row.owner_id === p.userId) ||
        (row.visibility === "organization" && row.status === "published")
        ? Effect.succeed(true)
        : p.userId === null || row.allowlist.length === 0
        ? Effect.succeed(false)
        : repo.managesAny(p.userId, row.allowlist)

    const find = (principal: Principal, id: string, lock = false) =>
      Effect.gen(function*() {
        const row = isUuid(id) ? yield* repo.find(principal.organizationId, id, lock) : undefined
        if (row === undefined || !(yield* mayView(principal, row))) return yield* NotFound.of("Skill", id)
        return row
      })

    const mayChange = (p: Principal, row: SkillRow, what: string) =>
      isAdmin(p) || (p.userId !== null && row.owner_id === p.userId)
        ? Effect.void
        : Effect.fail(Forbidden.of(`Only Admins and the skill's owner may ${what}.`))

    /** Every action names a connection the caller may use and an operation it has, or a function of the org. */
    const checkActions = (principal: Principal, actions: ReadonlyArray<SkillAction>) =>
      Effect.forEach(
        actions,
        (action, i) =>
          (isFunctionAction(action)
            ? Effect.flatMap(
              functions.find(principal.organizationId, action.function_id),
              (row) =>
                row === undefined
                  ? Effect.fail({ message: `there is no function ${action.function_id} in this organization` })
                  : Effect.void
            )
            : connections.target(principal, "_", action.connection_id, action.operation_id)).pipe(
              Effect.mapError((e) => BadRequest.of(`\`actions[${i}]\`: ${e.message}`, undefined, "invalid_skill"))
            ),
        { discard: true }
      )

    /** Allowlisted agents must be agents of the organization. */
    const checkAllowlist = (principal: Principal, allowlist: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        for (const [i, id] of allowlist.entries()) {
          const agent = isUuid(id) ? yield* agents.find(principal.organizationId, id as AgentId) : undefined
          if (agent === undefined) {
            return yield* BadRequest.of(
              `\`allowlist[${i}]\`: there is no agent ${id} in this organization.`,
              undefined,
              "unknown_agent"
            )
          }
        }
      })

    const create = Effect.fn("Skills.create")(function*(principal: Principal, input: CreateSkill) {
      yield* requireOrganizationKey(principal, Policy.createSkills)
      yield* checkActions(principal, input.actions)
      yield* checkAllowlist(principal, input.allowlist)
      const existing = yield* repo.findByName(principal.organizationId, input.name)
      if (existing !== undefined) return yield* skillNameTaken(input.name)
      const row = yield* transaction(Effect.gen(function*() {
        const row = yield* repo.insert({
          id: Crypto.randomUUID() as SkillId,
          organization_id: principal.organizationId,
          name: input.name,
          description: input.description ?? "",
          owner_id: principal.userId,
          visibility: input.visibility,
          allowlist: input.allowlist,
          status: "draft",
          actions: input.actions
        })
        yield* audit.record(principal, {
          action: "CREATE_SKILL",
          targets: [{ type: "skill", id: row.id, name: row.name }],
          details: { visibility: row.visibility, allowlist: row.allowlist }
        })
        return row
      }))
      return toSkill(row)
    })

    const list = Effect.fn("Skills.list")(function*(principal: Principal, f: {
      readonly status?: SkillStatus | undefined
      readonly limit?: number | undefined
      readonly cursor?: string | undefined
    }) {
      const after = yield* positionOf(f.cursor)
      const limit = f.limit ?? 50
      const rows = yield* repo.list(principal.organizationId, {
        viewer: isAdmin(principal) ? "all" : principal.userId,
        status: f.status,
        after,
        limit: limit + 1
      })
      return pageOf(rows, limit, (row) => row.created_at, toSkill)
    })

    const get = (principal: Principal, id: string) => Effect.map(find(principal, id), toSkill)

    /** By name, whoever may see it: a manifest matches its skills by name. */
    const findByName = (principal: Principal, name: string) =>
      Effect.map(repo.findByName(principal.organizationId, name), (row) => row === undefined ? undefined : toSkill(row))

    // each change below holds the skill's row from its read to its write: two at once (a rename and a new
    // description, an archive and a publish) each apply to what the other wrote, and a change behind an archive
    // finds the skill archived, rather than writing back what it read before
    const update = Effect.fn("Skills.update")(function*(principal: Principal, id: string, input: UpdateSkill) {
      return yield* transaction(Effect.gen(function*() {
        const row = yield* find(principal, id, true)
        yield* mayChange(principal, row, "change it")
        if (row.status === "archived") {
          return yield* BadRequest.of("An archived skill cannot change.", undefined, "skill_archived")
        }
        if (input.actions !== undefined) yield* checkActions(principal, input.actions)
        if (input.name !== undefined && input.name.toLowerCase() !== row.name.toLowerCase()) {
          const taken = yield* repo.findByName(principal.organizationId, input.name)
          if (taken !== undefined) return yield* skillNameTaken(input.name)
        }
        const content = {
          name: input.name ?? row.name,
          description: input.description ?? row.description,
          actions: input.actions ?? row.actions
        }
        // nothing to change (`{}`, or what it holds already): no new version, nothing to audit
        if (
          content.name === row.name && content.description === row.description &&
          JSON.stringify(content.actions) === JSON.stringify(row.actions)
        ) return toSkill(row)
        const next = yield* repo.updateContent(principal.organizationId, row.id, content, principal.userId)
        yield* audit.record(principal, {
          action: "UPDATE_SKILL",
          targets: [{ type: "skill", id: row.id, name: next!.name }],
          details: { version: next!.version }
        })
        return toSkill(next!)
      }))
    })

    /** Who may hold the skill: Super admins, Admins and its owner only. */
    const setAccess = Effect.fn("Skills.setAccess")(function*(principal: Principal, id: string, input: SkillAccess) {
      return yield* transaction(Effect.gen(function*() {
        const row = yield* find(principal, id, true)
        yield* mayChange(principal, row, "change who may use it")
        if (input.visibility !== "restricted" && input.allowlist.length > 0) {
          return yield* invalidField("allowlist", "applies to `restricted` skills only.")
        }
        yield* checkAllowlist(principal, input.allowlist)
        // the ids as stored (a uuid column): compared, and recorded, as the skill will hold them
        const allowlist = input.allowlist.map((id) => id.toLowerCase())
        // what it holds already: not written (`updated_at` stays), nothing audited
        if (
          input.visibility === row.visibility && sameList(allowlist, row.allowlist)
        ) return toSkill(row)
        const next = yield* repo.setAccess(principal.organizationId, row.id, input.visibility, allowlist)
        yield* audit.record(principal, {
          action: "UPDATE_SKILL_ACCESS",
          targets: [{ type: "skill", id: row.id, name: row.name }],
          details: {
            before: { visibility: row.visibility, allowlist: row.allowlist },
            after: { visibility: next!.visibility, allowlist: next!.allowlist }
          }
        })
        return toSkill(next!)
      }))
    })

    const setStatus = (principal: Principal, id: string, status: "published" | "archived") =>
      transaction(Effect.gen(function*() {
        const row = yield* find(principal, id, true)
        if (status === "published") yield* requireOrganizationKey(principal, Policy.publishSkills)
        else yield* mayChange(principal, row, "archive it")
        if (row.status === status) return toSkill(row)
        if (row.status === "archived") {
          return yield* BadRequest.of("An archived skill stays archived.", undefined, "skill_archived")
        }
        const next = yield* repo.setStatus(principal.organizationId, row.id, status)
        yield* audit.record(principal, {
          action: status === "published" ? "PUBLISH_SKILL" : "ARCHIVE_SKILL",
          targets: [{ type: "skill", id: row.id, name: row.name }],
          details: { version: row.version }
        })
        return toSkill(next!)
      }))

    /** An agent the caller manages: Admins manage every agent, others the ones they created. */
    const managedAgent = (principal: Principal, agentId: string) =>
      Effect.gen(function*() {
        const agent =
          isUuid(agentId) && (principal.agentIds === null || principal.agentIds.includes(agentId as AgentId))
            ? yield* agents.find(principal.organizationId, agentId as AgentId)
            : undefined
        if (agent === undefined) return yield* NotFound.of("Agent", agentId)
        if (!isAdmin(principal) && (principal.userId === null || agent.created_by !== principal.userId)) {
          return yield* Forbidden.of("Only Admins and the agent's creator may change the skills it holds.")
        }
        return agent
      })

    /** `enforce`: a skill its visibility does not admit is refused; `report`: added and recorded; `off`: added. */
    const attach = Effect.fn("Skills.attach")(function*(principal: Principal, agentId: string, skillId: string) {
      yield* requirePermission(principal, Policy.addSkillsToAgents)
      const agent = yield* managedAgent(principal, agentId)
      const skill = yield* find(principal, skillId)
      if (skill.status !== "published") {
        return yield* BadRequest.of(
          `The skill '${skill.name}' is ${skill.status}: only published skills can be added to agents.`,
          undefined,
          "skill_not_published"
        )
      }
      const allowed = admits(skill, agent)
      if (!allowed && mode === "enforce") {
        yield* audit.record(principal, {
          action: "ATTACH_SKILL",
          outcome: "denied",
          targets: [{ type: "agent", id: agent.id, name: agent.name }, {
            type: "skill",
            id: skill.id,
            name: skill.name
          }],
          details: { allowed, mode }
        })
        return yield* Forbidden.of(
          `The skill '${skill.name}' is ${skill.visibility}${
            skill.visibility === "restricted" ? " and this agent is not on its allowlist" : ""
          }: it cannot be added to this agent (SERVICE_SKILL_VISIBILITY_MODE=enforce).`,
          "skill_not_allowed"
        )
      }
      const attachedAt = yield* transaction(Effect.gen(function*() {
        const { attached_at: attachedAt, inserted } = yield* repo.attach(agent.id, skill.id, principal.userId)
        // attached already: a PUT again changes nothing, and records nothing again
        if (!inserted) return attachedAt
        if (!allowed && mode === "report") {
          yield* repo.recordViolation({
            organizationId: principal.organizationId,
            skillId: skill.id,
            agentId: agent.id,
            taskId: null,
            kind: "attach",
            tool: null,
            mode,
            actor: actorOf(principal)
          })
        }
        yield* audit.record(principal, {
          action: "ATTACH_SKILL",
          targets: [{ type: "agent", id: agent.id, name: agent.name }, {
            type: "skill",
            id: skill.id,
            name: skill.name
          }],
          details: { allowed, mode }
        })
        return attachedAt
      }))
      return new AttachedSkill({ skill: toSkill(skill), attached_at: attachedAt, allowed })
    })

    const detach = Effect.fn("Skills.detach")(function*(principal: Principal, agentId: string, skillId: string) {
      const agent = yield* managedAgent(principal, agentId)
      if (!isUuid(skillId)) return yield* NotFound.of("Skill", skillId)
      const removed = yield* transaction(Effect.gen(function*() {
        const removed = yield* repo.detach(agent.id, skillId as SkillId)
        if (removed) {
          yield* audit.record(principal, {
            action: "DETACH_SKILL",
            targets: [{ type: "agent", id: agent.id, name: agent.name }, { type: "skill", id: skillId }]
          })
        }
        return removed
      }))
      if (!removed) return yield* NotFound.of("Skill on this agent", skillId)
    })

    const attached = Effect.fn("Skills.attached")(function*(principal: Principal, agentId: string) {
      const agent = isUuid(agentId) && (principal.agentIds === null || principal.agentIds.includes(agentId as AgentId))
        ? yield* agents.find(principal.organizationId, agentId as AgentId)
        : undefined
      if (agent === undefined) return yield* NotFound.of("Agent", agentId)
      const rows = yield* repo.attachedTo(agent.id)
      return rows.map((row) =>
        new AttachedSkill({ skill: toSkill(row), attached_at: row.attached_at, allowed: admits(row, agent) })
      )
    })

    /**
     * The runtime filter: the tools a run of `agent` gets, read when the run starts (so a change of scope
     * applies from the next run). Its own `skills` always; attached skills when published, and under
     * `enforce` only those whose visibility admits the agent.
     */
    const toolsFor = (
      agent: AgentRow,
      attached?: ReadonlyArray<AttachedRow>
    ): Effect.Effect<Array<SkillTool>> =>
      Effect.map(attached === undefined ? repo.attachedTo(agent.id) : Effect.succeed(attached), (rows) => [
        ...agent.skills.flatMap((s) =>
          s.operation_ids.map((op): SkillTool => ({
            target: { kind: "operation", connectionId: s.connection_id, operationRef: op },
            requiresApproval: false,
            approvalCondition: undefined,
            skillId: null,
            violation: false
          }))
        ),
        ...rows.filter((row) => row.status === "published").flatMap((row) => {
          const allowed = mode === "off" || admits(row, agent)
          if (!allowed && mode === "enforce") return []
          return row.actions.map((a): SkillTool => ({
            target: targetOf(a),
            requiresApproval: a.requires_approval,
            approvalCondition: a.approval_condition,
            skillId: row.id,
            violation: !allowed
          }))
        })
      ])

    const violations = (
      principal: Principal,
      f: {
        skill_id?: string | undefined
        agent_id?: string | undefined
        limit?: number | undefined
        cursor?: string | undefined
      }
    ) =>
      Effect.gen(function*() {
        yield* requireOrganizationKey(principal, Policy.readSkillViolations)
        const limit = f.limit ?? 50
        if ((f.skill_id !== undefined && !isUuid(f.skill_id)) || (f.agent_id !== undefined && !isUuid(f.agent_id))) {
          return { items: [], next_cursor: null }
        }
        if (f.cursor !== undefined && !/^\d+$/.test(f.cursor)) {
          return yield* BadRequest.of(
            "`cursor` is not one this API returned; start again without it.",
            undefined,
            "invalid_cursor"
          )
        }
        const rows = yield* repo.violations(principal.organizationId, {
          skillId: f.skill_id,
          agentId: f.agent_id,
          before: f.cursor,
          limit: limit + 1
        })
        const page = rows.slice(0, limit)
        return {
          items: page,
          next_cursor: rows.length > limit ? page[page.length - 1]!.id : null
        }
      })

    const recordUse = (
      v: { organizationId: Principal["organizationId"]; skillId: string; agentId: string; taskId: string; tool: string }
    ) =>
      repo.recordViolation({
        ...v,
        taskId: v.taskId as never,
        kind: "use",
        mode,
        actor: { type: "task", id: v.taskId }
      })

    return {
      mode,
      create,
      list,
      get,
      findByName,
      update,
      setAccess,
      setStatus,
      attach,
      detach,
      attached,
      toolsFor,
      violations,
      recordUse
    } as const
  }),
  dependencies: [SkillRepo.Default, AuditLog.Default, FunctionRepo.Default]
}) {}
