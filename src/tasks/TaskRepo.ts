import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { TaskErrorCode, TaskStatus } from "../../schema/Agents.js"
import type { AgentId, OrganizationId, ScheduleId, TaskId, UserId } from "../../schema/Ids.js"
import type { AgentRow } from "../agents/AgentRepo.js"
import { batched, batchItems, PgPool, prepared } from "../db/PgPool.js"
import type { AttachedRow } from "../skills/Skills.js"

export interface TaskRow {
  readonly id: TaskId
  readonly organization_id: OrganizationId
  readonly agent_id: AgentId
  readonly status: TaskStatus
  readonly result: string | null
  /** Why it failed (status error), as a stable code; null otherwise. */
  readonly error_code: TaskErrorCode | null
  readonly source: "api" | "mcp" | "schedule"
  /** The schedule whose run it is (`source` schedule). */
  readonly schedule_id: ScheduleId | null
  readonly user_id: string
  readonly user_email: string
  readonly input: string
  /** The agent's version the task runs (null for tasks made before agents had versions). */
  readonly agent_version: number | null
  /**
   * That version of the agent (from `agent_versions`; tasks made before versions carry their own copy in the
   * column of this name, which tasks no longer write).
   */
  readonly agent_snapshot: AgentRow
  readonly api_key_id: string | null
  /** Who invoked it (null for an organization key): the run acts as them, with their personal connections. */
  readonly invoker_user_id: UserId | null
  /** The agents the invoker could reach (null: every agent): the run's reach on their behalf. */
  readonly invoker_agent_ids: ReadonlyArray<AgentId> | null
  readonly oidc_token: Uint8Array | null
  readonly idempotency_key: string | null
  readonly request_hash: string | null
  readonly created_at: Date
  readonly started_at: Date | null
  readonly finished_at: Date | null
  /** Raised by each run's claim (`start`): 0 before the first run, 1 for a task inserted started. */
  readonly run_epoch: number
}

/** The wake-up channels of the nodes where readers wait for a task's end (`TaskRepo.watch`). */
export interface Waiters {
  readonly waiters: ReadonlyArray<string> | null
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

/** Agents whose latest snapshot a node holds (TaskRepo's `snapshots`), at most. */
const SNAPSHOTS_MAX = 1000

/** The statement's failure as a defect. */
const dies =
  <Args extends ReadonlyArray<any>, A, E, R>(f: (...args: Args) => Effect.Effect<A, E, R>) =>
  (...args: Args): Effect.Effect<A, never, R> => Effect.orDie(f(...args))

/** What a reader of a task sees (spec 2.6), without the run's own columns (the agent's snapshot above all). */
export type TaskSummary = Pick<
  TaskRow,
  | "id"
  | "agent_id"
  | "agent_version"
  | "status"
  | "result"
  | "error_code"
  | "source"
  | "schedule_id"
  | "user_id"
  | "user_email"
  | "created_at"
  | "finished_at"
>
const SUMMARY =
  "id, agent_id, agent_version, status, result, error_code, source, schedule_id, user_id, user_email, created_at, " +
  "finished_at"

/**
 * A task row of table alias `t` with its agent's snapshot: the task's own copy (tasks made before versions
 * have only that), else its version's. Needs `agent_versions v` joined on the task's version.
 */
const ROW =
  `t.id, t.organization_id, t.agent_id, t.agent_version, t.status, t.result, t.error_code, t.source, t.user_id,
  t.user_email, t.input, coalesce(t.agent_snapshot, v.snapshot) AS agent_snapshot, t.api_key_id, t.oidc_token,
  t.idempotency_key, t.request_hash, t.created_at, t.started_at, t.finished_at, t.schedule_id, t.run_epoch,
  t.invoker_user_id, t.invoker_agent_ids`
const VERSION_JOIN = "LEFT JOIN agent_versions v ON v.agent_id = t.agent_id AND v.version = t.agent_version"

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

/** What a run reads of its agent's attachments with its start (`attachedOf`). */
export interface Attachments {
  readonly skills: ReadonlyArray<AttachedRow>
  readonly knowledge: boolean
  readonly functions: boolean
}

/** A task to insert, as `task_insert` takes it. */
interface InsertItem {
  readonly id: TaskId
  readonly organization_id: OrganizationId
  readonly agent_id: AgentId
  readonly source: string
  readonly schedule_id: ScheduleId | null
  readonly user_id: string
  readonly user_email: string
  readonly input: string
  readonly api_key_id: string | null
  readonly invoker_user_id: string | null
  readonly invoker_agent_ids: ReadonlyArray<string> | null
  /** Sealed, base64. */
  readonly oidc_token: string | null
  readonly idempotency_key: string | null
  readonly request_hash: string | null
  readonly budget_checked: boolean
  /** Insert it `executing`: its run starts at once, on this node. */
  readonly start: boolean
  /** The agent's version whose snapshot this node holds: the statement sends it back only for another. */
  readonly known_version: number | null
  /** The task's shard (its Task entity's), for the sweep of the node that owns it. */
  readonly shard: number
}

/** A task inserted (or found by its idempotency key), as `insert` gives it. */
type InsertedTask = TaskRow & { inserted: boolean; attached: Attachments | null }

type Inserted = { readonly i: number } & (InsertedTask | { id: null; agent: AgentRow | null })

/** A task to end, as `task_finish` takes it: the model call's fields are null without one. */
interface FinishItem {
  readonly id: TaskId
  readonly status: string
  readonly result: string
  readonly error_code: TaskErrorCode | null
  readonly step_key: string | null
  readonly model_data: unknown
  readonly organization_id: OrganizationId | null
  readonly agent_id: AgentId | null
  readonly provider: string | null
  readonly model: string | null
  readonly input_tokens: number | null
  readonly output_tokens: number | null
  readonly cached_tokens: number | null
  readonly cost_usd: number | null
  /** Ends it only while this run's claim holds (a failed run's end); null: whatever run holds it. */
  readonly epoch: number | null
}

/** A run's claim on its task (`TaskRepo.start`, or the insert of a task inserted started). */
export interface Claim {
  /** The task's runs so far, this one included: 1 for the first, which has nothing to replay. */
  readonly epoch: number
}

export class TaskRepo extends Effect.Service<TaskRepo>()("tasks/TaskRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const pool = yield* PgPool

    // the statements every task runs are prepared (src/db/PgPool.ts), and the writes of many tasks at once
    // go together (`batched`); the rest go through PgClient

    /**
     * What is attached to agent $`param` as it is now, for its run: its skills (the runtime filter's input),
     * and whether it has knowledge bases or functions (a run of an agent without any reads neither).
     */
    const attachedOf = (param: string) => `
      jsonb_build_object('skills', coalesce((
        SELECT jsonb_agg(jsonb_build_object('id', s.id, 'status', s.status, 'visibility', s.visibility,
          'owner_id', s.owner_id, 'allowlist', to_jsonb(s.allowlist), 'actions', s.actions)
          ORDER BY a.attached_at, s.id)
        FROM agent_skills a JOIN skills s ON s.id = a.skill_id WHERE a.agent_id = ${param}
      ), '[]'::jsonb),
      'knowledge', EXISTS (SELECT 1 FROM agent_knowledge_bases k WHERE k.agent_id = ${param}),
      'functions', EXISTS (SELECT 1 FROM agent_functions f WHERE f.agent_id = ${param}))`

    /**
     * New tasks, inserted together (`batched`): each with its agent read in the same statement, and the
     * agent's current version recorded as the one it runs (no copy of it: `agent_versions` keeps every
     * version). A task that starts at once (one run on the invoking node) is inserted `executing`, with the
     * agent's attached skills read: the start of TaskRunner in the same commit. The snapshot of the version
     * comes back only when it is not the one the node holds (`known_version`). An idempotency key already
     * used gives the task that has it (`inserted` false); no task: `agent` says whether the agent exists.
     */
    const insertTasks = batched<InsertItem, Inserted>(
      pool,
      "task_insert",
      `WITH req AS (
        ${
        batchItems(`id uuid, organization_id uuid, agent_id uuid, source text, user_id text, user_email text,
          input text, api_key_id text, invoker_user_id uuid, invoker_agent_ids jsonb, oidc_token text, idempotency_key text,
          request_hash text, budget_checked boolean, start boolean, known_version int, shard smallint, schedule_id uuid`)
      }
      ),
      agent AS (
        SELECT req.i, a.version, v.snapshot, (a.budget IS NULL OR req.budget_checked) AS may_insert
        FROM req JOIN agents a ON a.id = req.agent_id AND a.organization_id = req.organization_id
          AND a.deleted_at IS NULL
        JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.version
      ),
      inserted AS (
        INSERT INTO tasks (id, organization_id, agent_id, status, source, schedule_id, user_id, user_email, input,
          agent_version, api_key_id, invoker_user_id, invoker_agent_ids, oidc_token, idempotency_key, request_hash,
          started_at, shard, run_epoch)
        SELECT req.id, req.organization_id, req.agent_id,
          CASE WHEN req.start THEN 'executing' ELSE 'pending' END, req.source, req.schedule_id, req.user_id,
          req.user_email, req.input, agent.version, req.api_key_id, req.invoker_user_id, req.invoker_agent_ids,
          decode(req.oidc_token, 'base64'), req.idempotency_key, req.request_hash,
          CASE WHEN req.start THEN now() END, req.shard, CASE WHEN req.start THEN 1 ELSE 0 END
        FROM req JOIN agent ON agent.i = req.i WHERE agent.may_insert
        ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING *
      ),
      task AS (
        SELECT req.i AS item, inserted.*, true AS inserted FROM req JOIN inserted ON inserted.id = req.id
        UNION ALL
        SELECT req.i, t.*, false FROM req
          JOIN tasks t ON t.organization_id = req.organization_id AND t.idempotency_key = req.idempotency_key
        WHERE NOT EXISTS (SELECT 1 FROM inserted WHERE inserted.id = req.id)
      )
      SELECT ${
        ROW.replace(
          "coalesce(t.agent_snapshot, v.snapshot)",
          "CASE WHEN t.agent_snapshot IS NULL AND t.agent_version = req.known_version THEN NULL " +
            "ELSE coalesce(t.agent_snapshot, v.snapshot) END"
        )
      }, t.inserted, req.i,
        CASE WHEN t.id IS NULL THEN (SELECT snapshot FROM agent WHERE agent.i = req.i) END AS agent,
        CASE WHEN t.inserted AND req.start THEN ${attachedOf("req.agent_id")} END AS attached
      FROM req LEFT JOIN task t ON t.item = req.i
        ${VERSION_JOIN} AND t.agent_version IS DISTINCT FROM req.known_version`,
      // one key's requests go one after the other: the second finds the first's task
      { apart: (t) => t.idempotency_key === null ? undefined : `${t.organization_id} ${t.idempotency_key}` }
    )

    /**
     * The snapshot of the latest version seen of each agent tasks were inserted for here, so that an insert
     * need not send it back (a version's snapshot never changes). Bounded: emptied when it grows past
     * SNAPSHOTS_MAX agents.
     */
    const snapshots = new Map<AgentId, { readonly version: number; readonly snapshot: AgentRow }>()

    /**
     * A new task of the organization's agent, which runs the agent's current version; with an idempotency
     * key already used, the existing task instead (`inserted: false`). Without a task: the agent is missing
     * (`agent` null), or it has a budget and `budgetChecked` was false, so its spending must be checked first.
     */
    const insert = (
      t: Omit<
        TaskRow,
        | "status"
        | "result"
        | "error_code"
        | "agent_version"
        | "agent_snapshot"
        | "created_at"
        | "started_at"
        | "finished_at"
        | "run_epoch"
      >,
      budgetChecked: boolean,
      /** Insert it started: its run begins at once, here. */
      started: boolean,
      shard: number
    ) => {
      const known = snapshots.get(t.agent_id)
      return insertTasks({
        ...t,
        oidc_token: t.oidc_token === null ? null : Buffer.from(t.oidc_token).toString("base64"),
        budget_checked: budgetChecked,
        start: started,
        known_version: known?.version ?? null,
        shard
      }).pipe(Effect.flatMap((row): Effect.Effect<
        { readonly task: InsertedTask } | { readonly task: undefined; readonly agent: AgentRow | null }
      > => {
        if (row!.id === null) return Effect.succeed({ task: undefined, agent: row!.agent })
        const task = row!
        if (task.agent_snapshot !== null) {
          if (task.agent_version !== null && task.agent_version > (known?.version ?? 0)) {
            if (snapshots.size >= SNAPSHOTS_MAX) snapshots.clear()
            snapshots.set(t.agent_id, { version: task.agent_version, snapshot: task.agent_snapshot })
          }
          return Effect.succeed({ task })
        }
        // the statement left it out: it is the version this node holds
        return known !== undefined && task.agent_version === known.version
          ? Effect.succeed({ task: { ...task, agent_snapshot: known.snapshot } })
          : Effect.dieMessage(`task ${task.id} came back without its agent's snapshot`)
      }))
    }

    const findTask = prepared<TaskSummary>(
      pool,
      "task_find",
      `SELECT ${SUMMARY} FROM tasks WHERE id = $1 AND organization_id = $2`
    )
    /** A task of the organization, as its readers see it. */
    const find = (organizationId: OrganizationId, id: TaskId) =>
      findTask([id, organizationId]).pipe(Effect.map(([row]): TaskSummary | undefined => row))

    const findStateById = prepared<TaskSummary & { readonly organization_id: OrganizationId }>(
      pool,
      "task_find_state",
      `SELECT organization_id, ${SUMMARY} FROM tasks WHERE id = $1`
    )
    /** A task as its readers see it, with whose it is: for its owner, answering a reader on another node. */
    const findState = (id: TaskId) => findStateById([id]).pipe(Effect.map(([row]) => row))

    /**
     * Readers waiting on another node than the one running the task: their node's wake-up channel is
     * added to the task's `waiters` (once), and the task comes back as it is, with `watched` true. Whoever
     * ends the task learns the channels from its ending statement and notifies them alone. The added
     * channel is in the same row as the end, so the two cannot miss each other: an end committed first
     * is what the reader gets; a registration committed first is what the end returns. Not durable
     * (`synchronous_commit` off for it): a registration lost in a crash costs the reader a re-read.
     * `watched` false with the task unfinished: the task ended meanwhile, read it again.
     */
    const watchTasks = batched<
      { id: TaskId; organization_id: OrganizationId; channel: string },
      TaskSummary & { i: number; watched: boolean }
    >(
      pool,
      "task_watch",
      `WITH req AS (${batchItems("id uuid, organization_id uuid, channel text")}),
      async_commit AS (SELECT set_config('synchronous_commit', 'off', true)),
      added AS (
        UPDATE tasks SET waiters = array_append(tasks.waiters, req.channel)
        FROM req, async_commit
        WHERE tasks.id = req.id AND tasks.organization_id = req.organization_id AND tasks.finished_at IS NULL
          AND NOT (req.channel = ANY(coalesce(tasks.waiters, '{}')))
        RETURNING req.i, ${SUMMARY.split(", ").map((c) => `tasks.${c}`).join(", ")}
      )
      SELECT i, true AS watched, ${SUMMARY} FROM added
      UNION ALL
      SELECT req.i, req.channel = ANY(coalesce(t.waiters, '{}')), ${SUMMARY.split(", ").map((c) => `t.${c}`).join(", ")}
      FROM req JOIN tasks t ON t.id = req.id AND t.organization_id = req.organization_id
      WHERE NOT EXISTS (SELECT 1 FROM added WHERE added.i = req.i)`
    )
    /** A task of the organization, its end to be announced on `channel` (see `watchTasks`). */
    const watch = (organizationId: OrganizationId, id: TaskId, channel: string) =>
      watchTasks({ id, organization_id: organizationId, channel })

    /** A task of the organization with the user's message, for its thread. */
    const findWithInput = (organizationId: OrganizationId, id: TaskId) =>
      sql<TaskSummary & Pick<TaskRow, "input">>`
        SELECT ${sql.literal(SUMMARY)}, input FROM tasks WHERE id = ${id} AND organization_id = ${organizationId}`
        .pipe(Effect.map(([row]) => row))

    const findTaskById = prepared<TaskRow>(
      pool,
      "task_find_by_id",
      `SELECT ${ROW} FROM tasks t ${VERSION_JOIN} WHERE t.id = $1`
    )
    /** For the Task entity, which runs tasks already authorized at invoke. */
    const findById = (id: TaskId) => findTaskById([id]).pipe(Effect.map(([row]): TaskRow | undefined => row))

    /** Whether the task was invoked with this key, or with another key or an MCP grant of this user. */
    const invokedBy = (organizationId: OrganizationId, id: TaskId, keyId: string, userId: string | null) =>
      sql<{ readonly own: boolean }>`
        SELECT EXISTS (
          SELECT 1 FROM tasks t WHERE t.id = ${id} AND t.organization_id = ${organizationId} AND (
            t.api_key_id = ${keyId}
            OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id = t.api_key_id AND k.user_id = ${userId}::uuid)
            OR EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = t.api_key_id AND g.user_id = ${userId}::uuid))
        ) AS own`.pipe(Effect.map(([row]) => row?.own === true))

    /** The agent's tasks not ended yet (pending, executing, waiting for approval). */
    const unfinishedOfAgent = (organizationId: OrganizationId, agentId: AgentId) =>
      sql<{ id: TaskId }>`
        SELECT id FROM tasks WHERE organization_id = ${organizationId} AND agent_id = ${agentId}
          AND finished_at IS NULL AND status IN ('pending', 'executing', 'waiting_approval')`.pipe(
        Effect.map((rows) => rows.map((r) => r.id))
      )

    /**
     * Ends the task as cancelled and withdraws its pending approval requests. Their rows are locked first, as a
     * decision (ApprovalRepo.decide) and the expiry sweep lock an approval before its task: a cancel that locked
     * the task first deadlocked with a decision made at the same moment (one of them a 500).
     */
    const cancel = (organizationId: OrganizationId, id: TaskId, result: string) =>
      sql.withTransaction(Effect.zipRight(
        sql`SELECT id FROM approvals WHERE task_id = ${id} AND status = 'pending' ORDER BY id FOR UPDATE`,
        cancelLocked(organizationId, id, result)
      ))

    const cancelLocked = (organizationId: OrganizationId, id: TaskId, result: string) =>
      sql<TaskSummary & Waiters>`
        WITH ended AS (
          UPDATE tasks SET status = 'cancelled', result = ${result}, finished_at = now(), oidc_token = NULL
          WHERE id = ${id} AND organization_id = ${organizationId}
            AND status IN ('pending', 'executing', 'waiting_approval')
          RETURNING ${sql.literal(SUMMARY)}, waiters
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
      scheduleId?: string | undefined
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
        ${f.scheduleId === undefined ? sql`` : sql`AND schedule_id = ${f.scheduleId}::uuid`}
        ${f.createdAfter === undefined ? sql`` : sql`AND created_at > ${f.createdAfter}`}
        ${f.createdBefore === undefined ? sql`` : sql`AND created_at < ${f.createdBefore}`}
        ${f.after === undefined ? sql`` : sql`AND (created_at, id) < (${f.after.at}, ${f.after.id}::uuid)`}
        ORDER BY created_at DESC, id DESC LIMIT ${f.limit}`

    /**
     * Appends to the thread ($1 task, $2 type, $3 step key, $4 data) when `condition` holds; a step already
     * recorded (same step key) is kept as it was.
     */
    const eventInsert = (condition = "true") => `
      INSERT INTO task_events (task_id, seq, type, step_key, data)
      SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4::jsonb FROM task_events WHERE task_id = $1
      HAVING ${condition}
      ON CONFLICT DO NOTHING`
    const insertEvent = prepared(pool, "task_event_insert", eventInsert())

    /** Appends to the thread; a step already recorded (same step key) is kept as it was. */
    const appendEvent = (taskId: TaskId, type: string, stepKey: string | null, data: unknown) =>
      insertEvent([taskId, type, stepKey, JSON.stringify(data)]).pipe(Effect.asVoid)

    /** The fence's CTEs: `held`, task $1's row while the run's claim (`epoch`) holds, locked when `lock`. */
    const heldUnder = (epoch: string, lock: boolean) => `
      held AS (
        SELECT status = 'executing' AS executing FROM tasks WHERE id = $1 AND run_epoch = ${epoch}${
      lock ? " FOR SHARE" : ""
    }
      )`
    /** `mark`: the tool call `stepKey` (null: none) marked made, if `held` holds and the task runs. */
    const markUnder = (stepKey: string) => `
      mark AS (
        INSERT INTO task_calls (task_id, step_key)
        SELECT $1, ${stepKey}::text FROM held WHERE held.executing AND ${stepKey} IS NOT NULL
        ON CONFLICT DO NOTHING RETURNING 1
      )`
    /**
     * A run's write (parameters as `eventInsert`'s): the thread append, made only while the run's claim ($5,
     * its epoch) holds, and the mark of the tool call the run makes next ($6, its step key, or null), made
     * only while the task also runs (`callStarts`). A write that marks a call locks the task's row, not only
     * reads it: a claim in progress is waited for and its outcome seen, and a claim waits for the write.
     * One that marks none only checks (the lock costs a write of the row).
     */
    const fencedStep = (marks: boolean) =>
      `${heldUnder("$5", marks)}, event AS (${eventInsert("EXISTS (SELECT 1 FROM held)")}), ${markUnder("$6")}`
    const FENCED_STEP_RESULT = "SELECT EXISTS (SELECT 1 FROM held) AS held, EXISTS (SELECT 1 FROM mark) AS marked"
    /** What a run's write did: `held` false, nothing (another run has the task); `marked`, the next call's mark. */
    interface Fenced {
      readonly held: boolean
      readonly marked: boolean
    }
    const insertStep = prepared<Fenced>(pool, "task_step_insert", `WITH ${fencedStep(false)} ${FENCED_STEP_RESULT}`)
    const insertStepMarking = prepared<Fenced>(
      pool,
      "task_step_insert_mark",
      `WITH ${fencedStep(true)} ${FENCED_STEP_RESULT}`
    )
    /** A run's step in its thread, while its claim holds; with `mark`, the next tool call's mark (`fencedStep`). */
    const appendStep = (
      taskId: TaskId,
      epoch: number,
      type: string,
      stepKey: string,
      data: unknown,
      mark: string | null
    ) =>
      Effect.map(
        (mark === null ? insertStep : insertStepMarking)([taskId, type, stepKey, JSON.stringify(data), epoch, mark]),
        ([row]) => row!
      )

    // the writes that go together are one statement each (data-modifying CTEs): one round trip, one commit

    const startTasks = batched<
      { id: TaskId; agent_id: AgentId },
      {
        i: number
        started: boolean
        attached: Attachments
        run_epoch: number | null
      }
    >(
      pool,
      "task_start",
      `WITH req AS (${batchItems("id uuid, agent_id uuid")}),
      started AS (
        UPDATE tasks SET status = 'executing', started_at = coalesce(tasks.started_at, now()),
          run_epoch = tasks.run_epoch + 1
        FROM req WHERE tasks.id = req.id AND tasks.status IN ('pending', 'executing')
        RETURNING tasks.id, tasks.run_epoch
      )
      SELECT req.i, started.id IS NOT NULL AS started, started.run_epoch,
        ${attachedOf("req.agent_id")} AS attached
      FROM req LEFT JOIN started ON started.id = req.id`
    )

    /**
     * The run starts, or resumes: executing, and claimed (a new epoch: an earlier run's writes stop
     * holding); in the same round trip, the agent's attached skills as they are now (the runtime filter's
     * input). `claim` undefined: the task had ended.
     */
    const start = (taskId: TaskId, agentId: AgentId) =>
      startTasks({ id: taskId, agent_id: agentId }).pipe(Effect.map((row) => ({
        attached: row!.attached,
        claim: row!.run_epoch === null ? undefined : { epoch: row!.run_epoch } satisfies Claim
      })))

    const markCall = prepared<{ marked: boolean }>(
      pool,
      "task_call_mark",
      `WITH ${heldUnder("$2", true)}, ${markUnder("$3")} SELECT EXISTS (SELECT 1 FROM mark) AS marked`
    )
    /**
     * Before a tool call the write before it did not mark (`fencedStep`): marks it made, while the run's
     * claim holds and the task runs, under the same lock. False: the call must not be made (another run
     * has the task, or it ended).
     */
    const callStarts = (taskId: TaskId, epoch: number, stepKey: string) =>
      Effect.map(markCall([taskId, epoch, stepKey]), ([row]) => row!.marked)

    const listMarked = prepared<{ step_key: string }>(
      pool,
      "task_calls",
      "SELECT step_key FROM task_calls WHERE task_id = $1"
    )
    /** The tool calls the task's runs marked before making them (`callStarts`), by step key. */
    const callsMarked = (taskId: TaskId) =>
      Effect.map(listMarked([taskId]), (rows) => new Set(rows.map((r) => r.step_key)))

    /** A usage record's columns, in the order both inserts below give them. */
    const USAGE_INSERT = `INSERT INTO llm_usage (task_id, seq, organization_id, agent_id, provider, model, input_tokens,
      output_tokens, cached_tokens, cost_usd)`
    /** A model call's usage record: $1 the task, then `usageValues` from $`first` on. */
    const usageInsert = (first: number) => `
      ${USAGE_INSERT}
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

    /** An end, with the nodes that wait for it elsewhere (their wake-up channels; see `watch`). */
    type Ended = Pick<TaskRow, "id" | "status" | "result" | "error_code" | "finished_at"> & Waiters
    /**
     * Ends tasks, each once, after recording the model call that ended it if any (its thread event and usage
     * record): one commit for them all. The end itself is the task's row (the thread shows it from there).
     */
    const finishTasks = batched<FinishItem, Ended & { i: number }>(
      pool,
      "task_finish",
      `WITH req AS (
        ${
        batchItems(`id uuid, status text, result text, error_code text, step_key text,
          model_data jsonb, organization_id uuid, agent_id uuid, provider text, model text, input_tokens int,
          output_tokens int, cached_tokens int, cost_usd numeric, epoch int`)
      }
      ),
      ended AS (
        UPDATE tasks SET status = req.status, result = req.result, error_code = req.error_code, finished_at = now(),
          oidc_token = NULL
        FROM req WHERE tasks.id = req.id AND tasks.status NOT IN ${"('" + TERMINAL.join("', '") + "')"}
          AND (req.epoch IS NULL OR tasks.run_epoch = req.epoch)
        RETURNING tasks.id, tasks.status, tasks.result, tasks.error_code, tasks.finished_at, tasks.waiters
      ),
      model_event AS (
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT req.id, coalesce((SELECT max(seq) FROM task_events e WHERE e.task_id = req.id), 0) + 1, 'model_call',
          req.step_key, req.model_data
        FROM req WHERE req.step_key IS NOT NULL
        ON CONFLICT DO NOTHING
      ),
      usage AS (
        ${USAGE_INSERT}
        SELECT req.id, coalesce((SELECT max(seq) FROM llm_usage u WHERE u.task_id = req.id), 0) + 1,
          req.organization_id, req.agent_id, req.provider, req.model, req.input_tokens, req.output_tokens,
          req.cached_tokens, req.cost_usd
        FROM req WHERE req.step_key IS NOT NULL
      )
      SELECT req.i, ended.* FROM req JOIN ended ON ended.id = req.id`,
      { apart: (t) => t.id }
    )

    /**
     * Ends a task once (`errorCode` says why it failed), and records the model call that ended it, if any:
     * one commit for both. A task already ended keeps its outcome (the model call is still recorded: it was
     * made and paid for). The user's token is erased. Not fenced by the run's claim: a run that got this far
     * without a write refused has made no call the task's other run depends on, and its answer stands (a
     * fence here cost a third of the tasks/s of `npm run bench -- tasks`). A run that failed is fenced
     * (`epoch`, its claim's): its failure may be its node's, e.g. connections ended while it was paused and
     * another run took the task over.
     */
    const finishWith = (
      id: TaskId,
      status: (typeof TERMINAL)[number],
      result: string,
      errorCode: TaskErrorCode | null,
      modelCall?: ModelCallRecord,
      epoch?: number
    ): Effect.Effect<Ended | undefined> => {
      const u = modelCall?.usage
      return Effect.orDie(finishTasks({
        id,
        status,
        result,
        error_code: errorCode,
        step_key: modelCall?.stepKey ?? null,
        model_data: modelCall?.data ?? null,
        organization_id: u?.organizationId ?? null,
        agent_id: u?.agentId ?? null,
        provider: u?.provider ?? null,
        model: u?.model ?? null,
        input_tokens: u?.input ?? null,
        output_tokens: u?.output ?? null,
        cached_tokens: u?.cached ?? null,
        cost_usd: u?.cost ?? null,
        epoch: epoch ?? null
      }))
    }

    const listEvents = prepared<EventRow>(
      pool,
      "task_events",
      "SELECT seq, type, step_key, at, data FROM task_events WHERE task_id = $1 ORDER BY seq"
    )
    const events = (taskId: TaskId) => listEvents([taskId])

    const insertModelCall = prepared<Fenced>(
      pool,
      "task_model_call",
      `WITH ${fencedStep(true)}, usage AS (${usageInsert(7)}) ${FENCED_STEP_RESULT}`
    )
    /**
     * A run's model call: its thread event and the mark of its first tool call (`fencedStep`), and its usage
     * record in any case (it was paid for), in one statement.
     */
    const recordModelCall = (record: ModelCallRecord, epoch: number, mark: string | null) =>
      Effect.map(
        insertModelCall([
          record.usage.taskId,
          "model_call",
          record.stepKey,
          JSON.stringify(record.data),
          epoch,
          mark,
          ...usageValues(record)
        ]),
        ([row]) => row!
      )

    const usage = (taskId: TaskId) =>
      sql<UsageRow>`
        SELECT seq, at, provider, model, input_tokens, output_tokens, cached_tokens, cost_usd::text AS cost_usd
        FROM llm_usage WHERE task_id = ${taskId} ORDER BY seq`

    // a failed statement is a defect here, as in every repository: callers see only their domain's errors
    return {
      insert: dies(insert),
      find: dies(find),
      findWithInput: dies(findWithInput),
      findById: dies(findById),
      findState: dies(findState),
      watch: dies(watch),
      invokedBy: dies(invokedBy),
      start: dies(start),
      finishWith,
      cancel: dies(cancel),
      unfinishedOfAgent: dies(unfinishedOfAgent),
      list: dies(list),
      appendEvent: dies(appendEvent),
      appendStep: dies(appendStep),
      callStarts: dies(callStarts),
      callsMarked: dies(callsMarked),
      events: dies(events),
      recordModelCall: dies(recordModelCall),
      usage: dies(usage)
    } as const
  })
}) {}
