import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { AgentId, OrganizationId, ScheduleId, TaskId, UserId } from "../../schema/Ids.js"
import type { Overlap } from "../../schema/Schedules.js"
import { keyset } from "../db/Keyset.js"
import type { PageRequest } from "../support/Cursor.js"

export interface ScheduleFields {
  readonly name: string
  readonly agent_id: AgentId
  readonly cron: string | null
  readonly every_ms: number | null
  readonly timezone: string
  readonly input_text: string
  readonly user_id: string
  readonly user_email: string
  readonly enabled: boolean
  readonly start_at: Date | null
  readonly end_at: Date | null
  readonly jitter_ms: number
  readonly overlap: Overlap
  readonly catchup_window_ms: number
  readonly next_tick: Date | null
  readonly next_run_at: Date | null
}

/** A change's fields: without `next_tick` and `next_run_at`, the stored ones stay. */
export type ScheduleChange = Omit<ScheduleFields, "next_tick" | "next_run_at"> & Partial<ScheduleFields>

export interface ScheduleRow extends ScheduleFields {
  readonly id: ScheduleId
  readonly organization_id: OrganizationId
  readonly created_by: UserId | null
  readonly created_by_key: string
  readonly created_at: Date
  readonly updated_at: Date
}

export type TickStatus = "pending" | "fired" | "skipped" | "buffered" | "failed"
export type TickKind = "scheduled" | "catchup" | "manual"

export interface TickRow {
  readonly scheduled_for: Date
  readonly kind: TickKind
  readonly status: TickStatus
  readonly task_id: TaskId | null
  readonly reason: string | null
}

/** A schedule with its last tick, as readers see it. */
export type ScheduleWithLast = ScheduleRow & { readonly last: TickRow | null }

/** A claimed schedule: its row, whether its previous run is still going, and its run waiting (`buffer_one`). */
export type ClaimedSchedule = ScheduleRow & {
  readonly running: boolean
  readonly buffered_for: Date | null
}

/**
 * What the claim's statement also reads of a claimed schedule, for the bulk path: its creator's role now
 * (null: no longer a member), whether the organization key that made it (no person did) was revoked or may not
 * use its agent, and whether its agent exists without a budget (its tasks need no spending check).
 */
export type ClaimedForBulk = ClaimedSchedule & {
  readonly last_task_id: TaskId | null
  readonly creator_role: string | null
  readonly creator_key_barred: boolean
  readonly plain_agent: boolean
}

/** A tick's task to make in the claim's own transaction (the bulk path): its id, shard and request hash. */
export interface TickTask {
  readonly schedule_id: ScheduleId
  readonly scheduled_for: Date
  readonly id: TaskId
  readonly shard: number
  readonly request_hash: string
}

/** What the scheduler decided, with the ticks' tasks to make in bulk. */
export type Plan = Decisions & { readonly tasks: ReadonlyArray<TickTask> }

/** A tick to make: the schedule it is of, for the task's principal and input. */
export interface OpenTick {
  readonly schedule: ScheduleRow
  readonly scheduled_for: Date
}

/** What the scheduler decided for the schedules it claimed. */
export interface Decisions {
  readonly ticks: ReadonlyArray<{ schedule_id: ScheduleId; scheduled_for: Date; kind: TickKind; status: TickStatus }>
  /** Buffered ticks whose previous run ended: they are made now. */
  readonly promoted: ReadonlyArray<{ schedule_id: ScheduleId; scheduled_for: Date }>
  readonly moves: ReadonlyArray<{ id: ScheduleId; next_tick: Date | null; next_run_at: Date | null }>
}

const COLUMNS = `s.id, s.organization_id, s.agent_id, s.name, s.cron, s.every_ms::float8 AS every_ms, s.timezone,
  s.input_text, s.user_id, s.user_email, s.enabled, s.start_at, s.end_at, s.jitter_ms::float8 AS jitter_ms, s.overlap,
  s.catchup_window_ms::float8 AS catchup_window_ms, s.created_by, s.created_by_key, s.next_tick, s.next_run_at,
  s.created_at, s.updated_at`

const LAST = `(SELECT jsonb_build_object('scheduled_for', k.scheduled_for, 'kind', k.kind, 'status', k.status,
    'task_id', k.task_id, 'reason', k.reason)
  FROM schedule_ticks k WHERE k.schedule_id = s.id ORDER BY k.scheduled_for DESC LIMIT 1) AS last`

const withLast = (row: ScheduleRow & { last: any }): ScheduleWithLast => ({
  ...row,
  last: row.last === null ? null : { ...row.last, scheduled_for: new Date(row.last.scheduled_for) }
})

/**
 * Ids as one array parameter (`{a,b}`), beside a `json_to_recordset` join: the planner takes a recordset for
 * 100 rows whatever it holds, and joined it to `schedules` by reading the whole table (10 ms at 10,000
 * schedules, for each claim of 500); `id = ANY(…)` has its real count, so the rows are found by their key.
 */
const uuidArray = (ids: ReadonlyArray<string>) => `{${ids.join(",")}}`

/** Why a schedule was paused when its agent was deleted (the reason of its failed run, as for a creator who left). */
export const AGENT_DELETED =
  "The schedule's agent was deleted; a Builder can point it at another agent (`agent_id`) and resume it, or delete it."

/** Why a run waiting for the previous one (`buffered`) was not made. */
const PAUSED_WAITING = "The schedule was paused while this run waited for the previous one to end."

/** The key of a tick's task: spaces, which a client's `Idempotency-Key` cannot hold, keep it apart from theirs. */
export const tickKey = (scheduleId: ScheduleId, scheduledFor: Date) =>
  `schedule ${scheduleId} ${scheduledFor.toISOString()}`

export class ScheduleRepo extends Effect.Service<ScheduleRepo>()("schedules/ScheduleRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    // set when a schedule is made or changed on this node: the scheduler's sleep ends then (it may be due sooner)
    const written = yield* Effect.makeLatch(false)

    const insert = (row: Omit<ScheduleRow, "updated_at">) =>
      sql<ScheduleRow>`
        INSERT INTO schedules ${sql.insert({ ...row, updated_at: row.created_at })}
        RETURNING ${sql.literal(COLUMNS.replaceAll("s.", ""))}`.pipe(
        Effect.map(([r]) => withLast({ ...r!, last: null }))
      )

    /** With `lock`, the row is locked until the caller's transaction ends (a change reads what it changes). */
    const find = (organizationId: OrganizationId, id: ScheduleId, lock = false) =>
      sql<ScheduleRow & { last: any }>`
        SELECT ${sql.literal(COLUMNS)}, ${sql.literal(LAST)} FROM schedules s
        WHERE s.id = ${id} AND s.organization_id = ${organizationId} ${lock ? sql`FOR UPDATE OF s` : sql``}`.pipe(
        Effect.map(([r]) => r === undefined ? undefined : withLast(r))
      )

    const listed = (organizationId: OrganizationId, agentIds: ReadonlyArray<string> | null, agentId?: AgentId) =>
      sql`s.organization_id = ${organizationId}
        ${
        agentIds === null
          ? sql``
          : agentIds.length === 0
          ? sql`AND false`
          : sql`AND s.agent_id::text IN ${sql.in(agentIds)}`
      }
        ${agentId === undefined ? sql`` : sql`AND s.agent_id = ${agentId}`}`

    /** Oldest first; with `page`, a page of them (see `keyset`). */
    const list = (
      organizationId: OrganizationId,
      agentIds: ReadonlyArray<string> | null,
      agentId?: AgentId,
      page?: PageRequest
    ) => {
      const k = keyset(sql, "s", page)
      return sql<ScheduleRow & { last: any }>`
        SELECT ${sql.literal(COLUMNS)}, ${sql.literal(LAST)} FROM schedules s
        WHERE ${listed(organizationId, agentIds, agentId)} ${k.after} ${k.order} ${k.limit}`
        .pipe(Effect.map((rows) => rows.map(withLast)))
    }

    const count = (organizationId: OrganizationId, agentIds: ReadonlyArray<string> | null, agentId?: AgentId) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM schedules s WHERE ${listed(organizationId, agentIds, agentId)}`
        .pipe(Effect.map(([r]) => r?.n ?? 0))

    /**
     * Changes the schedule; the row is locked meanwhile, so no node claims it half-changed. Without `next_tick`
     * and `next_run_at`, the stored ones stay (as the claims moved them). Paused, a run waiting for the previous
     * one (`buffered`) is skipped: made on a resume, it would be a run missed while paused.
     */
    const update = (
      organizationId: OrganizationId,
      id: ScheduleId,
      fields: ScheduleChange
    ) =>
      sql.withTransaction(Effect.gen(function*() {
        if (!fields.enabled) {
          // the schedule's row first, as a claim locks it before its ticks
          const locked = yield* sql`
            SELECT id FROM schedules WHERE id = ${id} AND organization_id = ${organizationId} FOR UPDATE`
          if (locked.length > 0) {
            yield* sql`
              UPDATE schedule_ticks SET status = 'skipped', reason = ${PAUSED_WAITING}
              WHERE schedule_id = ${id} AND status = 'buffered'`
          }
        }
        const [r] = yield* sql<ScheduleRow & { last: any }>`
          UPDATE schedules s SET ${sql.update({ ...fields, updated_at: new Date() })}
          WHERE s.id = ${id} AND s.organization_id = ${organizationId}
          RETURNING ${sql.literal(COLUMNS)}, ${sql.literal(LAST)}`
        return r === undefined ? undefined : withLast(r)
      }))

    const remove = (organizationId: OrganizationId, id: ScheduleId) =>
      sql`DELETE FROM schedules WHERE id = ${id} AND organization_id = ${organizationId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0)
      )

    /**
     * Claims up to `limit` due schedules (`next_run_at` passed) that no other node holds, lets `plan` say which
     * ticks to make and when to look again, and writes that: all in one transaction, so a tick is decided
     * once cluster-wide. The ticks `plan` gives a task for (`tasks`) are made in the same transaction, in
     * bulk: each tick committed `fired` with its task, or not at all. A tick whose key already has a task
     * (made by the invoke path of a node that died) gets that task, not a second. Returns the tasks inserted,
     * to be started, and the ticks left `pending` (no bulk task: a budget, a creator gone), for `ScheduleRuns`.
     */
    const claim = (limit: number, plan: (claimed: ReadonlyArray<ClaimedForBulk>, now: Date) => Plan) =>
      sql.withTransaction(Effect.gen(function*() {
        const claimed = yield* sql<ClaimedForBulk & { now: Date }>`
          WITH due AS (
            SELECT * FROM schedules WHERE next_run_at <= now() ORDER BY next_run_at LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          )
          SELECT ${sql.literal(COLUMNS)}, s.last_task_id, now() AS now,
            CASE WHEN s.overlap = 'allow' THEN false ELSE
              coalesce((SELECT t.finished_at IS NULL FROM tasks t WHERE t.id = s.last_task_id), false) OR EXISTS (
                SELECT 1 FROM schedule_ticks k WHERE k.schedule_id = s.id AND k.status = 'pending')
            END AS running,
            (SELECT min(k.scheduled_for) FROM schedule_ticks k WHERE k.schedule_id = s.id AND k.status = 'buffered')
              AS buffered_for,
            (SELECT m.role FROM memberships m WHERE m.organization_id = s.organization_id AND m.user_id = s.created_by)
              AS creator_role,
            s.created_by IS NULL AND EXISTS (SELECT 1 FROM api_keys k WHERE k.id = s.created_by_key
              AND k.organization_id = s.organization_id AND (k.revoked_at IS NOT NULL
                OR (jsonb_typeof(k.agent_ids) = 'array' AND NOT k.agent_ids @> jsonb_build_array(s.agent_id::text))))
              AS creator_key_barred,
            EXISTS (SELECT 1 FROM agents a WHERE a.id = s.agent_id AND a.organization_id = s.organization_id
              AND a.deleted_at IS NULL AND a.budget IS NULL) AS plain_agent
          FROM due s`
        if (claimed.length === 0) return { claimed: 0, open: [] as Array<OpenTick>, started: [] as Array<TaskId> }
        const decisions = plan(claimed, claimed[0]!.now)
        const byId = new Map(claimed.map((s) => [s.id, s]))
        const key = (t: { schedule_id: ScheduleId; scheduled_for: Date }) =>
          `${t.schedule_id} ${t.scheduled_for.getTime()}`
        // a tick the bulk path makes is written `fired` with its task's id, and the task in the same statement
        const planned = new Map(decisions.tasks.map((t) => [key(t), t]))
        const taskOf = (t: { schedule_id: ScheduleId; scheduled_for: Date }) => planned.get(key(t))?.id ?? null
        // the schedule's latest run is its planned task (what `skip` looks at), put back below if its tick was
        // not opened: joining the ticks written to the moves here costs more than all the rest
        const lastRun = new Map(decisions.tasks.map((t) => [t.schedule_id, t.id]))
        const moves = decisions.moves.map((m) => ({ ...m, last_task_id: lastRun.get(m.id) ?? null }))
        const tasks = decisions.tasks.map((t) => {
          const schedule = byId.get(t.schedule_id)!
          return {
            id: t.id,
            shard: t.shard,
            request_hash: t.request_hash,
            key: tickKey(t.schedule_id, t.scheduled_for),
            schedule_id: t.schedule_id,
            organization_id: schedule.organization_id,
            agent_id: schedule.agent_id,
            input: schedule.input_text,
            user_id: schedule.user_id,
            user_email: schedule.user_email,
            api_key_id: schedule.created_by_key,
            // runs act as the schedule's creator, as the invoke path's do (null: an organization key made it)
            invoker_user_id: schedule.created_by
          }
        })
        const opened = yield* sql<
          { schedule_id: ScheduleId; scheduled_for: Date; task_id: TaskId | null; inserted: boolean }
        >`
          WITH ticks AS (
            INSERT INTO schedule_ticks (schedule_id, scheduled_for, kind, status, task_id)
            SELECT schedule_id, scheduled_for, kind, CASE WHEN task_id IS NULL THEN status ELSE 'fired' END, task_id
            FROM json_to_recordset(${JSON.stringify(decisions.ticks.map((t) => ({ ...t, task_id: taskOf(t) })))}::json)
              AS r(schedule_id uuid, scheduled_for timestamptz, kind text, status text, task_id uuid)
            ON CONFLICT DO NOTHING
            RETURNING schedule_id, scheduled_for, status, task_id
          ),
          promoted AS (
            UPDATE schedule_ticks k
            SET status = CASE WHEN p.task_id IS NULL THEN 'pending' ELSE 'fired' END, task_id = p.task_id,
              created_at = now()
            FROM json_to_recordset(${
          JSON.stringify(decisions.promoted.map((t) => ({ ...t, task_id: taskOf(t) })))
        }::json)
              AS p(schedule_id uuid, scheduled_for timestamptz, task_id uuid)
            WHERE k.schedule_id = p.schedule_id AND k.scheduled_for = p.scheduled_for AND k.status = 'buffered'
              AND k.schedule_id = ANY(${uuidArray(decisions.promoted.map((t) => t.schedule_id))}::uuid[])
            RETURNING k.schedule_id, k.scheduled_for, k.task_id
          ),
          opened AS (
            SELECT schedule_id, scheduled_for, task_id FROM ticks WHERE status IN ('pending', 'fired')
            UNION ALL SELECT schedule_id, scheduled_for, task_id FROM promoted
          ),
          -- the tasks of the ticks opened here (one that existed already is another's to make), as
          -- Tasks.invoke inserts a schedule's run (src/tasks/TaskRepo.ts, task_insert: keep the two in step),
          -- pending: its run starts after the commit, or, should this node die first, by its shard's sweep
          inserted AS (
            INSERT INTO tasks (id, organization_id, agent_id, status, source, schedule_id, user_id, user_email,
              input, agent_version, api_key_id, invoker_user_id, invoker_agent_ids, idempotency_key, request_hash,
              shard, created_at)
            -- scoped to the schedule's agent, as ScheduleRuns' principal is
            SELECT r.id, r.organization_id, r.agent_id, 'pending', 'schedule', r.schedule_id, r.user_id,
              r.user_email, r.input, a.version, r.api_key_id, r.invoker_user_id, jsonb_build_array(r.agent_id), r.key,
              r.request_hash, r.shard,
              date_trunc('milliseconds', clock_timestamp())
            FROM json_to_recordset(${JSON.stringify(tasks)}::json) AS r(id uuid, shard smallint, request_hash text,
              key text, schedule_id uuid, organization_id uuid, agent_id uuid, input text, user_id text,
              user_email text, api_key_id text, invoker_user_id uuid)
            JOIN agents a ON a.id = r.agent_id AND a.organization_id = r.organization_id AND a.deleted_at IS NULL
            WHERE r.id = ANY(ARRAY(SELECT task_id FROM opened WHERE task_id IS NOT NULL))
            ON CONFLICT (organization_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING id
          ),
          moved AS (
            UPDATE schedules s SET next_tick = m.next_tick, next_run_at = m.next_run_at,
              last_task_id = coalesce(m.last_task_id, s.last_task_id)
            FROM json_to_recordset(${JSON.stringify(moves)}::json)
              AS m(id uuid, next_tick timestamptz, next_run_at timestamptz, last_task_id uuid)
            WHERE s.id = m.id AND s.id = ANY(${uuidArray(moves.map((m) => m.id))}::uuid[])
          )
          SELECT o.schedule_id, o.scheduled_for, o.task_id,
            o.task_id = ANY(ARRAY(SELECT id FROM inserted)) AS inserted
          FROM opened o`
        const openedKeys = new Set(opened.map(key))
        const notOpened = decisions.tasks.filter((t) => !openedKeys.has(key(t)))
        if (notOpened.length > 0) {
          const previous = notOpened.map((t) => ({ id: t.schedule_id, last: byId.get(t.schedule_id)!.last_task_id }))
          yield* sql`
            UPDATE schedules s SET last_task_id = p.last
            FROM json_to_recordset(${JSON.stringify(previous)}::json) AS p(id uuid, last uuid)
            WHERE s.id = p.id AND s.id = ANY(${uuidArray(previous.map((p) => p.id))}::uuid[])`
        }
        const missing = opened.filter((t) => t.task_id !== null && !t.inserted)
        const found = missing.length === 0 ? [] : yield* recordMissing(missing.map((t) => ({
          schedule_id: t.schedule_id,
          scheduled_for: t.scheduled_for,
          organization_id: byId.get(t.schedule_id)!.organization_id,
          key: tickKey(t.schedule_id, t.scheduled_for)
        })))
        const toInvoke = new Set(found.filter((t) => t.task_id === null).map(key))
        return {
          claimed: claimed.length,
          open: opened
            .filter((t) => t.task_id === null || toInvoke.has(key(t)))
            .map((t): OpenTick => ({ schedule: byId.get(t.schedule_id)!, scheduled_for: t.scheduled_for })),
          started: opened.filter((t) => t.inserted).map((t) => t.task_id!)
        }
      }))

    /**
     * Ticks written `fired` whose planned task was not inserted, recorded as they are: a key that already has a
     * task (the invoke path made it) gives that task, `fired`; an agent deleted meanwhile gives none, and the
     * tick goes back to `pending`, for `ScheduleRuns`. Rare: the common claim never runs this.
     */
    const recordMissing = (
      ticks: ReadonlyArray<
        { schedule_id: ScheduleId; scheduled_for: Date; organization_id: OrganizationId; key: string }
      >
    ) =>
      sql<{ schedule_id: ScheduleId; scheduled_for: Date; task_id: TaskId | null }>`
        WITH m AS (
          SELECT m.schedule_id, m.scheduled_for,
            (SELECT t.id FROM tasks t WHERE t.organization_id = m.organization_id AND t.idempotency_key = m.key)
              AS task_id
          FROM json_to_recordset(${JSON.stringify(ticks)}::json)
            AS m(schedule_id uuid, scheduled_for timestamptz, organization_id uuid, key text)
        ),
        ticks AS (
          UPDATE schedule_ticks k
          SET status = CASE WHEN m.task_id IS NULL THEN 'pending' ELSE 'fired' END, task_id = m.task_id
          FROM m WHERE k.schedule_id = m.schedule_id AND k.scheduled_for = m.scheduled_for
        ),
        latest AS (
          UPDATE schedules s SET last_task_id = m.task_id FROM m WHERE s.id = m.schedule_id
        )
        SELECT schedule_id, scheduled_for, task_id FROM m`

    /**
     * Ticks left `pending` for longer than `staleMs` (the node making them died or stalled): to be made by this
     * node. Each is taken once per `staleMs` (its time is moved on), so nodes do not all make it at once; if two
     * do, its task's key makes it one task.
     */
    const stale = (staleMs: number, limit: number) =>
      sql<ScheduleRow & { scheduled_for: Date }>`
        WITH picked AS (
          SELECT schedule_id, scheduled_for FROM schedule_ticks
          WHERE status = 'pending' AND created_at < now() - make_interval(secs => ${staleMs / 1000})
          ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ),
        taken AS (
          UPDATE schedule_ticks k SET created_at = now() FROM picked p
          WHERE k.schedule_id = p.schedule_id AND k.scheduled_for = p.scheduled_for
          RETURNING k.schedule_id, k.scheduled_for
        )
        SELECT ${sql.literal(COLUMNS)}, k.scheduled_for FROM taken k JOIN schedules s ON s.id = k.schedule_id`.pipe(
        Effect.map((rows) => rows.map(({ scheduled_for, ...schedule }): OpenTick => ({ schedule, scheduled_for })))
      )

    /**
     * How long until the next schedule is due, in ms by the database's clock (≤ 0: due now); null: none is.
     * Untraced: a poll several times a second on every node would be a root span each in the operator's traces.
     */
    const nextDueIn = sql<{ ms: number | null }>`
      SELECT (extract(epoch FROM min(next_run_at) - now()) * 1000)::float8 AS ms FROM schedules
      WHERE next_run_at IS NOT NULL`.pipe(Effect.map(([r]) => r?.ms ?? null), Effect.withTracerEnabled(false))

    /**
     * A manual run's tick, at this millisecond; undefined when another run has it (try again); "gone" when the
     * schedule was deleted since it was read. Its row is locked first: a delete committing meanwhile makes it
     * "gone", not a foreign key violation.
     */
    const insertManual = (id: ScheduleId) =>
      sql<{ found: boolean; scheduled_for: Date | null }>`
        WITH s AS (SELECT id FROM schedules WHERE id = ${id} FOR KEY SHARE),
        made AS (
          INSERT INTO schedule_ticks (schedule_id, scheduled_for, kind, status)
          SELECT id, date_trunc('milliseconds', clock_timestamp()), 'manual', 'pending' FROM s
          ON CONFLICT DO NOTHING
          RETURNING scheduled_for
        )
        SELECT EXISTS (SELECT 1 FROM s) AS found, (SELECT scheduled_for FROM made) AS scheduled_for`.pipe(
        Effect.map(([r]) => r === undefined || !r.found ? "gone" as const : r.scheduled_for ?? undefined)
      )

    /** The ticks' outcomes; a tick's task becomes its schedule's latest run (what `skip` looks at). */
    const settle = (
      outcomes: ReadonlyArray<{
        schedule_id: ScheduleId
        scheduled_for: Date
        status: TickStatus
        task_id: TaskId | null
        reason: string | null
      }>
    ) =>
      outcomes.length === 0 ? Effect.void : sql`
        WITH r AS (
          SELECT * FROM jsonb_to_recordset(${JSON.stringify(outcomes)}::jsonb)
            AS r(schedule_id uuid, scheduled_for timestamptz, status text, task_id uuid, reason text)
        ),
        ticks AS (
          UPDATE schedule_ticks k SET status = r.status, task_id = r.task_id, reason = r.reason
          FROM r WHERE k.schedule_id = r.schedule_id AND k.scheduled_for = r.scheduled_for AND k.status = 'pending'
        )
        UPDATE schedules s SET last_task_id = r.task_id FROM r WHERE s.id = r.schedule_id AND r.task_id IS NOT NULL`
        .pipe(Effect.asVoid)

    /** The task a tick's key made, if any (a run made before its node died, found again). */
    const taskByKey = (organizationId: OrganizationId, key: string) =>
      sql<{ id: TaskId }>`SELECT id FROM tasks WHERE organization_id = ${organizationId} AND idempotency_key = ${key}`
        .pipe(Effect.map(([r]) => r?.id))

    /**
     * Pauses a schedule that may not run any more (its creator lost the right to run it, its agent is gone). The
     * schedule, if this paused it (it was enabled); undefined when it was paused already, or is gone.
     */
    const disable = (id: ScheduleId) =>
      sql<{ enabled: boolean; organization_id: OrganizationId; name: string }>`
        WITH before AS (SELECT id, enabled FROM schedules WHERE id = ${id} FOR UPDATE)
        UPDATE schedules s SET enabled = false, next_run_at = NULL,
          updated_at = CASE WHEN b.enabled THEN now() ELSE s.updated_at END
        FROM before b WHERE s.id = b.id
        RETURNING b.enabled, s.organization_id, s.name`.pipe(
        Effect.map(([r]) => r?.enabled === true ? { organization_id: r.organization_id, name: r.name } : undefined)
      )

    /**
     * Pauses the agent's schedules, in the caller's transaction (the agent is being deleted: they could only fail
     * from now on). As the invoke path does for a creator who left, each schedule that was enabled gets a failed
     * run saying why (its `last_run`), and a run waiting (`buffered`) fails with it. Returns the schedules paused.
     */
    const pauseOfAgent = (organizationId: OrganizationId, agentId: AgentId) =>
      sql<{ id: ScheduleId; name: string }>`
        WITH before AS (
          SELECT id, enabled FROM schedules WHERE organization_id = ${organizationId} AND agent_id = ${agentId}
          FOR UPDATE
        ),
        paused AS (
          UPDATE schedules s SET enabled = false, next_run_at = NULL, updated_at = now()
          FROM before b WHERE s.id = b.id AND b.enabled
          RETURNING s.id, s.name
        ),
        waiting AS (
          UPDATE schedule_ticks k SET status = 'failed', reason = ${AGENT_DELETED}
          FROM before b WHERE k.schedule_id = b.id AND k.status = 'buffered'
        ),
        failed AS (
          INSERT INTO schedule_ticks (schedule_id, scheduled_for, kind, status, reason)
          SELECT id, date_trunc('milliseconds', now()), 'scheduled', 'failed', ${AGENT_DELETED} FROM paused
          ON CONFLICT DO NOTHING
        )
        SELECT id, name FROM paused ORDER BY id`

    return {
      disable: (id: ScheduleId) => Effect.orDie(disable(id)),
      pauseOfAgent: (organizationId: OrganizationId, agentId: AgentId) =>
        Effect.orDie(pauseOfAgent(organizationId, agentId)),
      insert: (row: Omit<ScheduleRow, "updated_at">) => Effect.orDie(insert(row)),
      find: (organizationId: OrganizationId, id: ScheduleId, lock?: boolean) =>
        Effect.orDie(find(organizationId, id, lock)),
      list: (
        organizationId: OrganizationId,
        agentIds: ReadonlyArray<string> | null,
        agentId?: AgentId,
        page?: PageRequest
      ) => Effect.orDie(list(organizationId, agentIds, agentId, page)),
      count: (organizationId: OrganizationId, agentIds: ReadonlyArray<string> | null, agentId?: AgentId) =>
        Effect.orDie(count(organizationId, agentIds, agentId)),
      update: (organizationId: OrganizationId, id: ScheduleId, fields: ScheduleChange) =>
        Effect.orDie(update(organizationId, id, fields)),
      remove: (organizationId: OrganizationId, id: ScheduleId) => Effect.orDie(remove(organizationId, id)),
      claim: (limit: number, plan: (claimed: ReadonlyArray<ClaimedForBulk>, now: Date) => Plan) =>
        Effect.orDie(claim(limit, plan)),
      stale: (staleMs: number, limit: number) => Effect.orDie(stale(staleMs, limit)),
      nextDueIn: Effect.orDie(nextDueIn),
      /** A schedule was made or changed on this node, committed: the scheduler looks at what is due now. */
      wake: written.open,
      /** Before the scheduler reads what is due: a `wake` after it ends the sleep that follows. */
      armWake: written.close,
      /** `ms` at most; less when woken since `armWake`. */
      sleepUnlessWoken: (ms: number) => Effect.asVoid(Effect.timeoutOption(written.await, ms)),
      insertManual: (id: ScheduleId) => Effect.orDie(insertManual(id)),
      settle: (outcomes: Parameters<typeof settle>[0]) => Effect.orDie(settle(outcomes)),
      taskByKey: (organizationId: OrganizationId, key: string) => Effect.orDie(taskByKey(organizationId, key))
    } as const
  })
}) {}
