import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { startRun, TaskEntity } from "../../cluster/TaskEntity.js"
import { Conflict, NotFound } from "../../schema/Errors.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { Approval, type ApprovalCondition } from "../../schema/Skills.js"
import { actorOf, AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { transactionIn } from "../db/Transaction.js"
import { requirePermission } from "../identity/IdentityPolicy.js"
import { pageOf, positionOf } from "../support/Cursor.js"
import { isUuid } from "../support/Uuid.js"
import { ApprovalRepo, type ApprovalRequest, type ApprovalRow } from "./ApprovalRepo.js"

const toApproval = (row: ApprovalRow) =>
  new Approval({
    id: row.id,
    task_id: row.task_id,
    agent_id: row.agent_id,
    skill_id: row.skill_id,
    tool: row.tool,
    arguments: row.arguments,
    status: row.status,
    kind: row.kind,
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

/**
 * Requests for approval of tool calls. A run that reaches a call needing approval records the request and
 * pauses the task (`waiting_approval`); nothing waits in memory, so a restart loses nothing. A decision
 * (or the expiry of the request) puts the task back to `executing` and starts it again, and the run,
 * replaying its recorded steps, finds the decision where it stopped.
 */
export class Approvals extends Effect.Service<Approvals>()("skills/Approvals", {
  effect: Effect.gen(function*() {
    const repo = yield* ApprovalRepo
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const audit = yield* AuditLog
    const client = yield* TaskEntity.client
    // SWITCHYARD_APPROVAL_TIMEOUT, checked with the other settings before the node starts
    const timeout = (yield* SwitchyardConfig).approvalTimeout

    const forStep = repo.forStep

    /** Records the request (once per step), its thread event, and pauses the task. */
    const request = (r: ApprovalRequest) => repo.request(r, timeout)

    /** Goes back to waiting: the run found its request still undecided. */
    const pause = repo.pause

    const resume = (taskId: TaskId) => startRun(client, taskId, "2 seconds")

    const find = (principal: Principal, id: string) =>
      Effect.flatMap(
        isUuid(id) ? repo.find(principal.organizationId, id) : Effect.succeed(undefined),
        // a key limited to some agents sees only their approvals, as it sees only their tasks
        (row): Effect.Effect<ApprovalRow, NotFound> =>
          row === undefined || (principal.agentIds !== null && !principal.agentIds.includes(row.agent_id as AgentId))
            ? Effect.fail(NotFound.of("Approval", id))
            : Effect.succeed(row)
      )

    /** The 409 for a request no longer pending, saying what became of it. */
    const settled = (row: ApprovalRow) =>
      Conflict.of(
        row.status === "expired"
          // expired by time, or withdrawn when its task was cancelled (the reason says which)
          ? `This request expired${row.reason === null ? "" : ` (${row.reason.replace(/\.$/, "")})`}: ` +
            "it can no longer be decided."
          : `This request was ${row.status} already.`,
        "approval_decided"
      )

    const decide = (principal: Principal, id: string, status: "approved" | "rejected", reason: string | undefined) =>
      Effect.gen(function*() {
        yield* requirePermission(principal, status === "approved" ? Policy.approveToolCalls : Policy.rejectToolCalls)
        const current = yield* find(principal, id)
        if (current.status !== "pending") return yield* settled(current)
        const by = actorOf(principal)
        const decided = yield* transaction(Effect.gen(function*() {
          const row = yield* repo.decide(current.id, status, by, reason ?? null)
          if (row === undefined) return undefined
          yield* audit.record(principal, {
            action: status === "approved" ? "APPROVE_TOOL_CALL" : "REJECT_TOOL_CALL",
            targets: [
              { type: "approval", id: row.id, name: row.tool },
              ...(row.task_id === null ? [] : [{ type: "task", id: row.task_id }])
            ],
            ...(reason === undefined ? {} : { details: { reason } })
          })
          return row
        }))
        // settled since it was read (decided by another, expired, its task cancelled): say how
        if (decided === undefined) return yield* Effect.flatMap(find(principal, id), settled)
        // a command's runtime learns the decision by reading the approval; no run is paused on it
        if (decided.kind === "tool_call" && decided.task_id !== null) yield* resume(decided.task_id)
        return toApproval(decided)
      })

    const list = Effect.fn("Approvals.list")(function*(principal: Principal, f: {
      readonly status?: string | undefined
      readonly task_id?: string | undefined
      readonly limit?: number | undefined
      readonly cursor?: string | undefined
    }) {
      yield* requirePermission(principal, Policy.listApprovals)
      const after = yield* positionOf(f.cursor)
      if (f.task_id !== undefined && !isUuid(f.task_id)) return { items: [], next_cursor: null }
      const limit = f.limit ?? 50
      const rows = yield* repo.list(principal.organizationId, {
        // a key limited to some agents lists only their requests, as `find` reads only theirs
        agentIds: principal.agentIds,
        status: f.status,
        taskId: f.task_id,
        after,
        limit: limit + 1
      })
      return pageOf(rows, limit, (row) => row.requested_at, toApproval)
    })

    /** Requests past their time: expired, and their tasks started again (to end in `error`, documented). */
    const expireDue = Effect.gen(function*() {
      const taskIds = yield* repo.expireDue
      yield* Effect.forEach(taskIds, resume, { discard: true })
      return taskIds.length
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
  dependencies: [ApprovalRepo.Default, AuditLog.Default]
}) {}
