import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { TaskStatus } from "../../schema/Agents.js"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import type { AgentRow } from "../agents/AgentRepo.js"
import { PgPool, prepared } from "../db/PgPool.js"
import type { AttachedRow } from "../skills/Skills.js"

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

/** What a reader of a task sees (spec 2.6), without the run's own columns (the agent's snapshot above all). */
export type TaskSummary = Pick<
  TaskRow,
  "id" | "agent_id" | "status" | "result" | "source" | "user_id" | "user_email" | "created_at" | "finished_at"
>
const SUMMARY = "id, agent_id, status, result, source, user_id, user_email, created_at, finished_at"

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
    const pool = yield* PgPool

    // the statements every task runs are prepared (src/db/PgPool.ts); the rest go through PgClient

    /** The agent's attached skills as they are now (the runtime filter's input), for agent $`param`. */
    const attachedOf = (param: string) => `
      coalesce((
        SELECT jsonb_agg(jsonb_build_object('id', s.id, 'status', s.status, 'visibility', s.visibility,
          'owner_id', s.owner_id, 'allowlist', to_jsonb(s.allowlist), 'actions', s.actions)
          ORDER BY a.attached_at, s.id)
        FROM agent_skills a JOIN skills s ON s.id = a.skill_id WHERE a.agent_id = ${param}
      ), '[]'::jsonb)`

    /**
     * The agent is read and snapshotted in the statement that inserts its task: one round trip. A task
     * that starts at once (a sync invoke run on this node) is inserted `executing`, with the user's message
     * opening its thread and the agent's attached skills read: the start of TaskRunner in the same commit.
     * $13 is the user's message then.
     */
    const insertText = (started: boolean) =>
      `WITH agent AS (
        SELECT * FROM agents WHERE id = $3 AND organization_id = $2 AND deleted_at IS NULL
      ),
      inserted AS (
        INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, agent_snapshot,
          api_key_id, oidc_token, idempotency_key, request_hash, started_at)
        SELECT $1, $2, agent.id, ${started ? "'executing'" : "'pending'"}, $4, $5, $6, $7, to_jsonb(agent), $8, $9,
          $10, $11, ${started ? "now()" : "NULL"}
        FROM agent WHERE agent.budget IS NULL OR $12::boolean
        ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING *, true AS inserted
      ),${
        started
          ? `
      event AS (
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT id, 1, 'user_message', 'user', $13::jsonb FROM inserted
      ),`
          : ""
      }
      task AS (
        SELECT * FROM inserted
        UNION ALL
        SELECT *, false AS inserted FROM tasks
        WHERE organization_id = $2 AND idempotency_key = $10 AND NOT EXISTS (SELECT 1 FROM inserted)
      )
      SELECT task.*, CASE WHEN task.id IS NULL THEN (SELECT to_jsonb(agent) FROM agent) END AS agent${
        started ? `, CASE WHEN task.inserted THEN ${attachedOf("$3")} END AS attached` : ""
      }
      FROM (SELECT) AS one LEFT JOIN task ON true`
    type Inserted =
      | (TaskRow & { inserted: boolean; attached?: ReadonlyArray<AttachedRow> | null })
      | { id: null; agent: AgentRow | null }
    const insertTask = prepared<Inserted>(pool, "task_insert", insertText(false))
    const insertStartedTask = prepared<Inserted>(pool, "task_insert_started", insertText(true))

    /**
     * A new task of the organization's agent, with the agent as it is now for its snapshot; with an
     * idempotency key already used, the existing task instead (`inserted: false`). Without a task: the agent
     * is missing (`agent` null), or it has a budget and `budgetChecked` was false, so its spending must be
     * checked first.
     */
    const insert = (
      t: Omit<TaskRow, "status" | "result" | "agent_snapshot" | "created_at" | "started_at" | "finished_at">,
      budgetChecked: boolean,
      /** Insert it started, with this message of the user's opening the thread. */
      startWith?: unknown
    ) =>
      (startWith === undefined ? insertTask : insertStartedTask)([
        t.id,
        t.organization_id,
        t.agent_id,
        t.source,
        t.user_id,
        t.user_email,
        t.input,
        t.api_key_id,
        t.oidc_token,
        t.idempotency_key,
        t.request_hash,
        budgetChecked,
        ...(startWith === undefined ? [] : [JSON.stringify(startWith)])
      ]).pipe(Effect.map(([row]) => row!.id === null ? { task: undefined, agent: row!.agent } : { task: row! }))

    const findTask = prepared<TaskSummary>(
      pool,
      "task_find",
      `SELECT ${SUMMARY} FROM tasks WHERE id = $1 AND organization_id = $2`
    )
    /** A task of the organization, as its readers see it. */
    const find = (organizationId: OrganizationId, id: TaskId) =>
      findTask([id, organizationId]).pipe(Effect.map(([row]): TaskSummary | undefined => row))

    const findTaskById = prepared<TaskRow>(pool, "task_find_by_id", "SELECT * FROM tasks WHERE id = $1")
    /** For the Task entity, which runs tasks already authorized at invoke. */
    const findById = (id: TaskId) => findTaskById([id]).pipe(Effect.map(([row]): TaskRow | undefined => row))

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
        SELECT * FROM ended`.pipe(
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
      sql<TaskSummary>`
        SELECT ${sql.literal(SUMMARY)} FROM tasks WHERE organization_id = ${organizationId}
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

    /**
     * Appends to the thread ($1 task, $2 type, $3 step key, $4 data); a step already recorded (same step
     * key) is kept as it was. Also the first part of the statements below.
     */
    const EVENT_INSERT = `
      INSERT INTO task_events (task_id, seq, type, step_key, data)
      SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4::jsonb FROM task_events WHERE task_id = $1
      ON CONFLICT DO NOTHING`
    const insertEvent = prepared(pool, "task_event_insert", EVENT_INSERT)

    /** Appends to the thread; a step already recorded (same step key) is kept as it was. */
    const appendEvent = (taskId: TaskId, type: string, stepKey: string | null, data: unknown) =>
      insertEvent([taskId, type, stepKey, JSON.stringify(data)]).pipe(Effect.asVoid)

    // the writes that go together are one statement each (data-modifying CTEs): one round trip, one commit

    const startTask = prepared<{ started: boolean; attached: ReadonlyArray<AttachedRow> }>(
      pool,
      "task_start",
      `WITH event AS (${EVENT_INSERT}),
      started AS (
        UPDATE tasks SET status = 'executing', started_at = coalesce(started_at, now())
        WHERE id = $1 AND status IN ('pending', 'executing') RETURNING id
      )
      SELECT EXISTS (SELECT 1 FROM started) AS started, ${attachedOf("$5::uuid")} AS attached`
    )

    /**
     * The run starts: executing, and the user's message opens the thread; in the same round trip, the
     * agent's attached skills as they are now (the runtime filter's input). `started` false: the task had
     * ended.
     */
    const start = (taskId: TaskId, agentId: AgentId, userMessage: unknown) =>
      startTask([taskId, "user_message", "user", JSON.stringify(userMessage), agentId]).pipe(
        Effect.map(([row]) => row!)
      )

    /** A model call's usage record: $1 the task, then `usageValues` from $`first` on. */
    const usageInsert = (first: number) => `
      INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens, output_tokens,
        cached_tokens, cost_usd)
      SELECT $1, coalesce(max(seq), 0) + 1, ${Array.from({ length: 8 }, (_, i) => `$${first + i}`).join(", ")}
      FROM llm_usage WHERE task_id = $1`
    const usageValues = ({ usage: u }: ModelCallRecord) => [
      u.organizationId,
      u.agentId,
      u.provider,
      u.model,
      u.input,
      u.output,
      u.cached,
      u.cost
    ]

    const ENDED = `
      ended AS (
        UPDATE tasks SET status = $2, result = $3, finished_at = now(), oidc_token = NULL
        WHERE id = $1 AND status NOT IN ${"('" + TERMINAL.join("', '") + "')"} RETURNING id, status, result, finished_at
      ),
      base AS (SELECT coalesce(max(seq), 0) AS seq FROM task_events WHERE task_id = $1)`
    /** The ending event after `offset` new ones (only if the task ended here), and the answer. */
    const lastEvent = (offset: number, data: string) => `
      last_event AS (
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT $1, base.seq + ${offset}, $4, NULL, ${data}::jsonb FROM base, ended
        ON CONFLICT DO NOTHING
      )
      SELECT * FROM ended`
    type Ended = Pick<TaskRow, "id" | "status" | "result" | "finished_at">
    // $1 task, $2 status, $3 result, $4 last event's type, then the model call's step key, data and usage
    const finishTask = prepared<Ended>(
      pool,
      "task_finish",
      `WITH ${ENDED}, ${lastEvent(1, "$5")}`
    )
    const finishTaskWithModelCall = prepared<Ended>(
      pool,
      "task_finish_with_model_call",
      `WITH ${ENDED},
      model_event AS (
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT $1, base.seq + 1, 'model_call', $5, $6::jsonb FROM base
        ON CONFLICT DO NOTHING
      ),
      usage AS (${usageInsert(7)}),
      ${lastEvent(2, "$15")}`
    )

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
      (modelCall === undefined
        ? finishTask([id, status, result, event.type, JSON.stringify(event.data)])
        : finishTaskWithModelCall([
          id,
          status,
          result,
          event.type,
          modelCall.stepKey,
          JSON.stringify(modelCall.data),
          ...usageValues(modelCall),
          JSON.stringify(event.data)
        ])).pipe(Effect.map(([row]): Ended | undefined => row))

    const listEvents = prepared<EventRow>(
      pool,
      "task_events",
      "SELECT seq, type, step_key, at, data FROM task_events WHERE task_id = $1 ORDER BY seq"
    )
    const events = (taskId: TaskId) => listEvents([taskId])

    const insertModelCall = prepared(
      pool,
      "task_model_call",
      `WITH event AS (${EVENT_INSERT}) ${usageInsert(5)}`
    )
    /** A model call: its thread event and its usage record, in one statement. */
    const recordModelCall = (record: ModelCallRecord) =>
      insertModelCall([
        record.usage.taskId,
        "model_call",
        record.stepKey,
        JSON.stringify(record.data),
        ...usageValues(record)
      ]).pipe(Effect.asVoid)

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
