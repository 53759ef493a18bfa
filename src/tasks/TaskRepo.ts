import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { TaskStatus } from "../../schema/Agents.js"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import type { AgentRow } from "../agents/AgentRepo.js"
import type { AttachedRow } from "../skills/Skills.js"
import { TASK_DONE_CHANNEL } from "./TaskCompletions.js"

export interface TaskRow {
  readonly id: TaskId
  readonly organization_id: OrganizationId
  readonly agent_id: AgentId
  readonly status: TaskStatus
  readonly result: string | null
  readonly source: "api" | "mcp"
  readonly user_id: string
  readonly user_email: string
  readonly input: string
  readonly agent_snapshot: AgentRow
  readonly api_key_id: string | null
  readonly oidc_token: Uint8Array | null
  readonly idempotency_key: string | null
  readonly request_hash: string | null
  readonly created_at: Date
  readonly started_at: Date | null
  readonly finished_at: Date | null
}

export interface EventRow {
  readonly seq: number
  readonly type: string
  readonly step_key: string | null
  readonly at: Date
  readonly data: any
}

export interface UsageRow {
  readonly seq: number
  readonly at: Date
  readonly provider: string
  readonly model: string
  readonly input_tokens: number
  readonly output_tokens: number
  readonly cached_tokens: number
  readonly cost_usd: string
}

const TERMINAL = ["completed", "error", "cancelled"] as const

/** A model call: its thread event (under its step key) and its usage record. */
export interface ModelCallRecord {
  readonly stepKey: string
  readonly data: unknown
  readonly usage: {
    readonly taskId: TaskId
    readonly organizationId: OrganizationId
    readonly agentId: AgentId
    readonly provider: string
    readonly model: string
    readonly input: number
    readonly output: number
    readonly cached: number
    readonly cost: number
  }
}

export class TaskRepo extends Effect.Service<TaskRepo>()("tasks/TaskRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    /** A new task; with an idempotency key already used, the existing task instead (`created: false`). */
    const insert = (t: Omit<TaskRow, "status" | "result" | "created_at" | "started_at" | "finished_at">) =>
      sql<TaskRow & { inserted: boolean }>`
        WITH inserted AS (
          INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, agent_snapshot,
            api_key_id, oidc_token, idempotency_key, request_hash)
          VALUES (${t.id}, ${t.organization_id}, ${t.agent_id}, 'pending', ${t.source}, ${t.user_id}, ${t.user_email},
            ${t.input}, ${JSON.stringify(t.agent_snapshot)}::jsonb, ${t.api_key_id}, ${t.oidc_token},
            ${t.idempotency_key}, ${t.request_hash})
          ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
          RETURNING *, true AS inserted
        )
        SELECT * FROM inserted
        UNION ALL
        SELECT *, false AS inserted FROM tasks
        WHERE organization_id = ${t.organization_id} AND idempotency_key = ${t.idempotency_key}
          AND NOT EXISTS (SELECT 1 FROM inserted)`.pipe(Effect.map(([row]) => row!))

    const find = (organizationId: OrganizationId, id: TaskId) =>
      sql<TaskRow>`SELECT * FROM tasks WHERE id = ${id} AND organization_id = ${organizationId}`.pipe(
        Effect.map(([row]): TaskRow | undefined => row)
      )

    /** For the Task entity, which runs tasks already authorized at invoke. */
    const findById = (id: TaskId) =>
      sql<TaskRow>`SELECT * FROM tasks WHERE id = ${id}`.pipe(Effect.map(([row]): TaskRow | undefined => row))

    const cancel = (organizationId: OrganizationId, id: TaskId, result: string) =>
      sql<TaskRow>`
        WITH ended AS (
          UPDATE tasks SET status = 'cancelled', result = ${result}, finished_at = now(), oidc_token = NULL
          WHERE id = ${id} AND organization_id = ${organizationId}
            AND status IN ('pending', 'executing', 'waiting_approval')
          RETURNING *
        ),
        -- nobody needs to decide for a task that is gone
        withdrawn AS (
          UPDATE approvals SET status = 'expired', decided_at = now(), reason = 'The task was cancelled.'
          WHERE task_id IN (SELECT id FROM ended) AND status = 'pending'
        )
        SELECT ended.*, pg_notify(${TASK_DONE_CHANNEL}, ended.id::text) FROM ended`.pipe(
        Effect.map(([row]) => row)
      )

    const list = (organizationId: OrganizationId, f: {
      agentIds: ReadonlyArray<string> | null
      agentId?: string | undefined
      status?: string | undefined
      userId?: string | undefined
      createdAfter?: Date | undefined
      createdBefore?: Date | undefined
      after?: { at: Date; id: string } | undefined
      limit: number
    }) =>
      sql<TaskRow>`
        SELECT * FROM tasks WHERE organization_id = ${organizationId}
        ${
        f.agentIds === null
          ? sql``
          : f.agentIds.length === 0
          ? sql`AND false`
          : sql`AND agent_id::text IN ${sql.in(f.agentIds)}`
      }
        ${f.agentId === undefined ? sql`` : sql`AND agent_id::text = ${f.agentId}`}
        ${f.status === undefined ? sql`` : sql`AND status = ${f.status}`}
        ${f.userId === undefined ? sql`` : sql`AND user_id = ${f.userId}`}
        ${f.createdAfter === undefined ? sql`` : sql`AND created_at > ${f.createdAfter}`}
        ${f.createdBefore === undefined ? sql`` : sql`AND created_at < ${f.createdBefore}`}
        ${f.after === undefined ? sql`` : sql`AND (created_at, id) < (${f.after.at}, ${f.after.id}::uuid)`}
        ORDER BY created_at DESC, id DESC LIMIT ${f.limit}`

    /** Appends to the thread; a step already recorded (same step key) is kept as it was. */
    const eventInsert = (taskId: TaskId, type: string, stepKey: string | null, data: unknown) =>
      sql`
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT ${taskId}, coalesce(max(seq), 0) + 1, ${type}, ${stepKey}, ${JSON.stringify(data)}::jsonb
        FROM task_events WHERE task_id = ${taskId}
        ON CONFLICT DO NOTHING`

    /** Appends to the thread; a step already recorded (same step key) is kept as it was. */
    const appendEvent = (taskId: TaskId, type: string, stepKey: string | null, data: unknown) =>
      eventInsert(taskId, type, stepKey, data).pipe(Effect.asVoid)

    // the writes that go together are one statement each (data-modifying CTEs): one round trip, one commit

    /**
     * The run starts: executing, and the user's message opens the thread; in the same round trip, the
     * agent's attached skills as they are now (the runtime filter's input). `started` false: the task had
     * ended.
     */
    const start = (taskId: TaskId, agentId: AgentId, userMessage: unknown) =>
      sql<{ started: boolean; attached: ReadonlyArray<AttachedRow> }>`
        WITH event AS (${eventInsert(taskId, "user_message", "user", userMessage)}),
        started AS (
          UPDATE tasks SET status = 'executing', started_at = coalesce(started_at, now())
          WHERE id = ${taskId} AND status IN ('pending', 'executing') RETURNING id
        )
        SELECT EXISTS (SELECT 1 FROM started) AS started,
          coalesce((
            SELECT jsonb_agg(jsonb_build_object('id', s.id, 'status', s.status, 'visibility', s.visibility,
              'owner_id', s.owner_id, 'allowlist', to_jsonb(s.allowlist), 'actions', s.actions)
              ORDER BY a.attached_at, s.id)
            FROM agent_skills a JOIN skills s ON s.id = a.skill_id WHERE a.agent_id = ${agentId}::uuid
          ), '[]'::jsonb) AS attached`.pipe(Effect.map(([row]) => row!))

    const usageInsert = ({ usage: u }: ModelCallRecord) =>
      sql`
        INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens, output_tokens,
          cached_tokens, cost_usd)
        SELECT ${u.taskId}, coalesce(max(seq), 0) + 1, ${u.organizationId}, ${u.agentId}, ${u.provider}, ${u.model},
          ${u.input}, ${u.output}, ${u.cached}, ${u.cost}
        FROM llm_usage WHERE task_id = ${u.taskId}`

    /**
     * Ends a task once, with its last thread event, and records the model call that ended it, if any: one
     * commit for all. A task already ended keeps its outcome (the model call is still recorded: it was made
     * and paid for). The user's token is erased.
     */
    const finishWith = (
      id: TaskId,
      status: (typeof TERMINAL)[number],
      result: string,
      event: { type: string; data: unknown },
      modelCall?: ModelCallRecord
    ) =>
      sql<Pick<TaskRow, "id" | "status" | "result" | "finished_at">>`
        WITH ended AS (
          UPDATE tasks SET status = ${status}, result = ${result}, finished_at = now(), oidc_token = NULL
          WHERE id = ${id} AND status NOT IN ${sql.in(TERMINAL)} RETURNING id, status, result, finished_at
        ),
        base AS (SELECT coalesce(max(seq), 0) AS seq FROM task_events WHERE task_id = ${id}),
        ${
        modelCall === undefined
          ? sql``
          : sql`model_event AS (
          INSERT INTO task_events (task_id, seq, type, step_key, data)
          SELECT ${id}, base.seq + 1, 'model_call', ${modelCall.stepKey}, ${JSON.stringify(modelCall.data)}::jsonb
          FROM base
          ON CONFLICT DO NOTHING
        ),
        usage AS (${usageInsert(modelCall)}),`
      }
        last_event AS (
          INSERT INTO task_events (task_id, seq, type, step_key, data)
          SELECT ${id}, base.seq + ${modelCall === undefined ? 1 : 2}, ${event.type}, NULL,
            ${JSON.stringify(event.data)}::jsonb
          FROM base, ended
          ON CONFLICT DO NOTHING
        )
        SELECT ended.*, pg_notify(${TASK_DONE_CHANNEL}, ended.id::text) FROM ended`.pipe(
        Effect.map(([row]) => row)
      )

    const events = (taskId: TaskId) =>
      sql<EventRow>`SELECT seq, type, step_key, at, data FROM task_events WHERE task_id = ${taskId} ORDER BY seq`

    /** A model call: its thread event and its usage record, in one statement. */
    const recordModelCall = (record: ModelCallRecord) =>
      sql`
        WITH event AS (${eventInsert(record.usage.taskId, "model_call", record.stepKey, record.data)})
        ${usageInsert(record)}`

    const usage = (taskId: TaskId) =>
      sql<UsageRow>`
        SELECT seq, at, provider, model, input_tokens, output_tokens, cached_tokens, cost_usd::text AS cost_usd
        FROM llm_usage WHERE task_id = ${taskId} ORDER BY seq`

    return {
      insert,
      find,
      findById,
      start,
      finishWith,
      cancel,
      list,
      appendEvent,
      events,
      recordModelCall,
      usage
    } as const
  })
}) {}
