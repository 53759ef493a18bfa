import { PgClient } from "@effect/sql-pg"
import { Config, Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import { startRun, TaskEntity } from "../../cluster/TaskEntity.js"
import { Conflict, NotFound } from "../../schema/Errors.js"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { Approval, type ApprovalCondition, type ApprovalId } from "../../schema/Skills.js"
import { actorOf, AuditLog } from "../audit/AuditLog.js"
import { requireRole } from "../identity/IdentityPolicy.js"
import { pageOf, positionOf } from "../support/Cursor.js"
import { isUuid } from "./Skills.js"

export interface ApprovalRow {
  readonly id: ApprovalId
  readonly organization_id: OrganizationId
  readonly task_id: TaskId
  readonly step_key: string
  readonly agent_id: string
  readonly skill_id: string | null
  readonly tool: string
  readonly connection_id: string
  readonly operation_id: string
  readonly arguments: unknown
  readonly status: "pending" | "approved" | "rejected" | "expired"
  readonly requested_at: Date
  readonly expires_at: Date
  readonly decided_at: Date | null
  readonly decided_by: unknown
  readonly reason: string | null
}

const toApproval = (row: ApprovalRow) =>
  new Approval({
    id: row.id,
    task_id: row.task_id,
    agent_id: row.agent_id,
    skill_id: row.skill_id,
    tool: row.tool,
    arguments: row.arguments,
    status: row.status,
    requested_at: row.requested_at,
    expires_at: row.expires_at,
    decided_at: row.decided_at,
    decided_by: row.decided_by,
    reason: row.reason
  })

const argumentAt = (args: unknown, path: string): unknown =>
  path.split(".").reduce<unknown>(
    (value, key) => (typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined),
    args
  )

/** Whether a call's arguments meet an approval condition; a missing or mistyped argument does not. */
export const conditionHolds = (condition: ApprovalCondition, args: unknown) => {
  const actual = argumentAt(args, condition.argument)
  if (actual === undefined || actual === null) return false
  const [a, b] = typeof condition.value === "number"
    ? [typeof actual === "number" ? actual : Number(actual), condition.value]
    : [actual, condition.value]
  if (typeof a === "number" && Number.isNaN(a)) return false
  switch (condition.op) {
    case "eq":
      return a === b
    case "ne":
      return a !== b
    case "gt":
      return (a as number) > (b as number)
    case "gte":
      return (a as number) >= (b as number)
    case "lt":
      return (a as number) < (b as number)
    case "lte":
      return (a as number) <= (b as number)
  }
}

/** SWITCHYARD_APPROVAL_TIMEOUT: how long a request for approval waits before it expires. */
export const approvalTimeoutConfig = Config.duration("SWITCHYARD_APPROVAL_TIMEOUT").pipe(
  Config.withDefault(Duration.hours(24))
)

/**
 * Requests for approval of tool calls. A run that reaches a call needing approval records the request and
 * pauses the task (`waiting_approval`); nothing waits in memory, so a restart loses nothing. A decision
 * (or the expiry of the request) puts the task back to `executing` and starts it again, and the run,
 * replaying its recorded steps, finds the decision where it stopped.
 */
export class Approvals extends Effect.Service<Approvals>()("skills/Approvals", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const audit = yield* AuditLog
    const client = yield* TaskEntity.client
    const timeout = yield* approvalTimeoutConfig

    const forStep = (taskId: TaskId, stepKey: string) =>
      sql<ApprovalRow>`SELECT * FROM approvals WHERE task_id = ${taskId} AND step_key = ${stepKey}`.pipe(
        Effect.map(([row]): ApprovalRow | undefined => row)
      )

    /** Records the request (once per step), its thread event, and pauses the task: one statement. */
    const request = (r: {
      organizationId: OrganizationId
      taskId: TaskId
      stepKey: string
      agentId: AgentId
      skillId: string | null
      tool: string
      connectionId: string
      operationId: string
      arguments: unknown
      user: unknown
    }) => {
      const id = Crypto.randomUUID()
      return sql`
        WITH approval AS (
          INSERT INTO approvals (id, organization_id, task_id, step_key, agent_id, skill_id, tool, connection_id,
            operation_id, arguments, status, expires_at)
          VALUES (${id}, ${r.organizationId}, ${r.taskId}, ${r.stepKey}, ${r.agentId}::uuid, ${r.skillId}::uuid,
            ${r.tool}, ${r.connectionId}::uuid, ${r.operationId}, ${JSON.stringify(r.arguments ?? null)}::jsonb,
            'pending', now() + make_interval(secs => ${Duration.toSeconds(timeout)}))
          ON CONFLICT (task_id, step_key) DO NOTHING
          RETURNING id
        ),
        event AS (
          INSERT INTO task_events (task_id, seq, type, step_key, data)
          SELECT ${r.taskId}, coalesce((SELECT max(seq) FROM task_events WHERE task_id = ${r.taskId}), 0) + 1,
            'approval_requested', ${`a:${r.stepKey}`},
            jsonb_build_object('approval_id', approval.id, 'name', ${r.tool}::text, 'arguments',
              ${JSON.stringify(r.arguments ?? null)}::jsonb, 'skill_id', ${r.skillId}::text, 'user',
              ${JSON.stringify(r.user)}::jsonb)
          FROM approval
          ON CONFLICT DO NOTHING
        )
        UPDATE tasks SET status = 'waiting_approval'
        WHERE id = ${r.taskId} AND status = 'executing'`
    }

    /** Goes back to waiting: the run found its request still undecided. */
    const pause = (taskId: TaskId) =>
      sql`UPDATE tasks SET status = 'waiting_approval' WHERE id = ${taskId} AND status = 'executing'`

    const resume = (taskId: TaskId) => startRun(client, taskId, "2 seconds")

    const find = (principal: Principal, id: string) =>
      Effect.flatMap(
        isUuid(id)
          ? sql<
            ApprovalRow
          >`SELECT * FROM approvals WHERE id = ${id}::uuid AND organization_id = ${principal.organizationId}`
          : Effect.succeed([]),
        ([row]) => row === undefined ? Effect.fail(NotFound.of("Approval", id)) : Effect.succeed(row)
      )

    const decide = (principal: Principal, id: string, status: "approved" | "rejected", reason: string | undefined) =>
      Effect.gen(function*() {
        yield* requireRole(principal, "admin", `${status === "approved" ? "approve" : "reject"} tool calls`)
        const current = yield* find(principal, id)
        if (current.status !== "pending") {
          return yield* Conflict.of(`This request was ${current.status} already.`, "approval_decided")
        }
        const by = actorOf(principal)
        const decided = yield* sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<ApprovalRow>`
            UPDATE approvals SET status = ${status}, decided_at = now(), decided_by = ${JSON.stringify(by)}::jsonb,
              reason = ${reason ?? null}
            WHERE id = ${current.id} AND status = 'pending' RETURNING *`
          if (row === undefined) return undefined
          yield* sql`
            WITH event AS (
              INSERT INTO task_events (task_id, seq, type, step_key, data)
              SELECT ${row.task_id}, coalesce(max(seq), 0) + 1, 'approval_decided', ${`d:${row.step_key}`},
                ${JSON.stringify({ approval_id: row.id, status, by, reason: reason ?? null })}::jsonb
              FROM task_events WHERE task_id = ${row.task_id}
              ON CONFLICT DO NOTHING
            )
            UPDATE tasks SET status = 'executing' WHERE id = ${row.task_id} AND status = 'waiting_approval'`
          yield* audit.record(principal, {
            action: status === "approved" ? "APPROVE_TOOL_CALL" : "REJECT_TOOL_CALL",
            targets: [{ type: "approval", id: row.id, name: row.tool }, { type: "task", id: row.task_id }],
            ...(reason === undefined ? {} : { details: { reason } })
          })
          return row
        }))
        if (decided === undefined) return yield* Conflict.of("This request was decided already.", "approval_decided")
        yield* resume(decided.task_id)
        return toApproval(decided)
      })

    const list = Effect.fn("Approvals.list")(function*(principal: Principal, f: {
      readonly status?: string | undefined
      readonly task_id?: string | undefined
      readonly limit?: number | undefined
      readonly cursor?: string | undefined
    }) {
      yield* requireRole(principal, "admin", "list approval requests")
      const after = yield* positionOf(f.cursor)
      if (f.task_id !== undefined && !isUuid(f.task_id)) return { items: [], next_cursor: null }
      const limit = f.limit ?? 50
      const rows = yield* sql<ApprovalRow>`
        SELECT * FROM approvals WHERE organization_id = ${principal.organizationId}
        ${f.status === undefined ? sql`` : sql`AND status = ${f.status}`}
        ${f.task_id === undefined ? sql`` : sql`AND task_id = ${f.task_id}::uuid`}
        ${after === undefined ? sql`` : sql`AND (requested_at, id) < (${after.at}, ${after.id}::uuid)`}
        ORDER BY requested_at DESC, id DESC LIMIT ${limit + 1}`
      return pageOf(rows, limit, (row) => row.requested_at, toApproval)
    })

    /** Requests past their time: expired, and their tasks started again (to end in `error`, documented). */
    const expireDue = Effect.gen(function*() {
      const rows = yield* sql<{ task_id: TaskId }>`
        WITH expired AS (
          UPDATE approvals SET status = 'expired', decided_at = now()
          WHERE status = 'pending' AND expires_at < now() RETURNING task_id
        )
        UPDATE tasks SET status = 'executing' FROM expired
        WHERE tasks.id = expired.task_id AND tasks.status = 'waiting_approval'
        RETURNING tasks.id AS task_id`
      yield* Effect.forEach(rows, (r) => resume(r.task_id), { discard: true })
      return rows.length
    })

    return {
      forStep,
      request,
      pause,
      list,
      get: (principal: Principal, id: string) => Effect.map(find(principal, id), toApproval),
      approve: (principal: Principal, id: string, reason?: string) => decide(principal, id, "approved", reason),
      reject: (principal: Principal, id: string, reason?: string) => decide(principal, id, "rejected", reason),
      expireDue,
      timeout
    } as const
  }),
  dependencies: [AuditLog.Default]
}) {}
