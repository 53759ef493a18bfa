import { PgClient } from "@effect/sql-pg"
import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import type { ApprovalId } from "../../schema/Skills.js"
import type { Position } from "../support/Cursor.js"

export interface ApprovalRow {
  readonly id: ApprovalId
  readonly organization_id: OrganizationId
  /** `null` for a command checked outside a task (kind `command`). */
  readonly task_id: TaskId | null
  readonly step_key: string
  readonly agent_id: string
  readonly skill_id: string | null
  readonly tool: string
  readonly connection_id: string | null
  readonly operation_id: string | null
  readonly arguments: unknown
  readonly status: "pending" | "approved" | "rejected" | "expired"
  readonly requested_at: Date
  readonly expires_at: Date
  readonly decided_at: Date | null
  readonly decided_by: unknown
  readonly reason: string | null
  /** `tool_call`: a run waits on it; `command`: a coding-agent runtime does (src/commands/). */
  readonly kind: "tool_call" | "command"
}

export interface ApprovalRequest {
  readonly organizationId: OrganizationId
  readonly taskId: TaskId
  readonly stepKey: string
  readonly agentId: AgentId
  readonly skillId: string | null
  readonly tool: string
  readonly connectionId: string | null
  readonly operationId: string | null
  /** A custom function's call names the function instead of a connection and an operation. */
  readonly functionId?: string | undefined
  readonly arguments: unknown
  readonly user: unknown
}

/**
 * Requests for approval, with the task status and thread events each change moves in the same statement. A
 * failed statement is a defect.
 */
export class ApprovalRepo extends Effect.Service<ApprovalRepo>()("skills/ApprovalRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const forStep = (taskId: TaskId, stepKey: string) =>
      sql<ApprovalRow>`SELECT * FROM approvals WHERE task_id = ${taskId} AND step_key = ${stepKey}`.pipe(
        Effect.map(([row]): ApprovalRow | undefined => row),
        Effect.orDie
      )

    /** Records the request (once per step), its thread event, and pauses the task: one statement. */
    const request = (r: ApprovalRequest, timeout: Duration.Duration) => {
      const id = Crypto.randomUUID()
      return sql`
        WITH approval AS (
          INSERT INTO approvals (id, organization_id, task_id, step_key, agent_id, skill_id, tool, connection_id,
            operation_id, function_id, arguments, status, expires_at)
          VALUES (${id}, ${r.organizationId}, ${r.taskId}, ${r.stepKey}, ${r.agentId}::uuid, ${r.skillId}::uuid,
            ${r.tool}, ${r.connectionId}::uuid, ${r.operationId}, ${r.functionId ?? null}::uuid,
            ${JSON.stringify(r.arguments ?? null)}::jsonb,
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
        WHERE id = ${r.taskId} AND status = 'executing'`.pipe(Effect.asVoid, Effect.orDie)
    }

    /** Back to waiting: the run found its request still undecided. */
    const pause = (taskId: TaskId) =>
      sql`UPDATE tasks SET status = 'waiting_approval' WHERE id = ${taskId} AND status = 'executing'`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const find = (organizationId: OrganizationId, id: string) =>
      sql<ApprovalRow>`SELECT * FROM approvals WHERE id = ${id}::uuid AND organization_id = ${organizationId}`.pipe(
        Effect.map(([row]): ApprovalRow | undefined => row),
        Effect.orDie
      )

    /**
     * Decides a pending request, and puts its thread event and the task back to `executing`; `undefined` when
     * it was decided already.
     */
    const decide = (
      id: ApprovalId,
      status: "approved" | "rejected",
      by: unknown,
      reason: string | null
    ) =>
      Effect.gen(function*() {
        const [row] = yield* sql<ApprovalRow>`
          UPDATE approvals SET status = ${status}, decided_at = now(), decided_by = ${JSON.stringify(by)}::jsonb,
            reason = ${reason}
          WHERE id = ${id} AND status = 'pending' RETURNING *`
        if (row === undefined || row.task_id === null) return row
        // a command's decision goes in its task's thread too, but its task was never paused for it
        yield* sql`
          WITH event AS (
            INSERT INTO task_events (task_id, seq, type, step_key, data)
            SELECT ${row.task_id}, coalesce(max(seq), 0) + 1, 'approval_decided', ${`d:${row.step_key}`},
              ${JSON.stringify({ approval_id: row.id, status, by, reason })}::jsonb
            FROM task_events WHERE task_id = ${row.task_id}
            ON CONFLICT DO NOTHING
          )
          UPDATE tasks SET status = 'executing'
          WHERE id = ${row.task_id} AND status = 'waiting_approval' AND ${row.kind} = 'tool_call'`
        return row
      }).pipe(Effect.orDie)

    /** Newest first. */
    const list = (organizationId: OrganizationId, f: {
      /** A key limited to agents: theirs only (`null`: every agent). */
      readonly agentIds: ReadonlyArray<string> | null
      readonly status?: string | undefined
      readonly taskId?: string | undefined
      readonly after?: Position | undefined
      readonly limit: number
    }) =>
      sql<ApprovalRow>`
        SELECT * FROM approvals WHERE organization_id = ${organizationId}
        ${
        f.agentIds === null
          ? sql``
          : f.agentIds.length === 0
          ? sql`AND false`
          : sql`AND agent_id::text IN ${sql.in(f.agentIds)}`
      }
        ${f.status === undefined ? sql`` : sql`AND status = ${f.status}`}
        ${f.taskId === undefined ? sql`` : sql`AND task_id = ${f.taskId}::uuid`}
        ${f.after === undefined ? sql`` : sql`AND (requested_at, id) < (${f.after.at}, ${f.after.id}::uuid)`}
        ORDER BY requested_at DESC, id DESC LIMIT ${f.limit}`.pipe(Effect.orDie)

    /**
     * Expires the requests past their time and puts their tasks back to `executing`: their ids. Polled every
     * second by each node's sweep, so untraced (a root span each time).
     */
    const expireDue = sql<{ task_id: TaskId }>`
      WITH expired AS (
        UPDATE approvals SET status = 'expired', decided_at = now()
        WHERE status = 'pending' AND expires_at < now() RETURNING task_id, kind
      )
      UPDATE tasks SET status = 'executing' FROM expired
      WHERE tasks.id = expired.task_id AND expired.kind = 'tool_call' AND tasks.status = 'waiting_approval'
      RETURNING tasks.id AS task_id`.pipe(
      Effect.map((rows) => rows.map((r) => r.task_id)),
      Effect.orDie,
      Effect.withTracerEnabled(false)
    )

    return { forStep, request, pause, find, decide, list, expireDue } as const
  })
}) {}
