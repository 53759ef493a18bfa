import { Duration, Effect } from "effect"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import { PgPool, prepared } from "../db/PgPool.js"

/** An event as read: what filters look at, and its envelope as the JSON text sent (`Event` of schema/Events.ts). */
export interface EventRecord {
  readonly id: bigint
  readonly type: string
  readonly taskId: string | null
  readonly agentId: string | null
  /** A personal connection's owner. */
  readonly ownerUserId: string | null
  /** `{"id","type","at","data"}`, as the database wrote it. */
  readonly json: string
}

/** A page of committed events after a position, and where to go on from. */
export interface EventPage {
  readonly events: ReadonlyArray<EventRecord>
  /** The position to read from next: the last event's id, or further when nothing below it can appear. */
  readonly next: bigint
  /** The page is full: read again at once. */
  readonly full: boolean
  /** Events are committed past what could be read (an older transaction still runs): read again soon. */
  readonly pending: boolean
  /** The highest id retention pruned in the organization (0: none). */
  readonly horizon: bigint
  /** Every event sent so far has a lower id (`xmin << 20`): a position at or past it names none. */
  readonly below: bigint
}

interface Row {
  readonly horizon: string
  readonly below: string
  readonly pending: boolean
  readonly id: string | null
  readonly type: string
  readonly task_id: string | null
  readonly agent_id: string | null
  readonly owner_user_id: string | null
  readonly json: string
}

/**
 * Reads what every transaction below the oldest one still running wrote ($1 organization, $2 after, $3
 * limit[, $4 task]): `below` is that bound as an event id (`xmin << 20`; ids are `xid << 20 | n`). Below it,
 * no transaction can still commit, so a reader that moves its position only through what it read (or up to
 * `below - 1`) never skips an event and never sees one twice. The retention horizon comes from the same
 * snapshot: events pruned since cannot go missing unnoticed.
 */
const readText = (taskFilter: boolean) => `
  WITH bound AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20 AS below),
  horizon AS (
    SELECT coalesce((SELECT pruned_through FROM event_horizons WHERE organization_id = $1), 0) AS through
  ),
  pending AS (
    SELECT EXISTS (
      SELECT 1 FROM events, bound WHERE organization_id = $1 AND id >= bound.below AND id > $2::bigint
    ) AS pending
  )
  SELECT horizon.through::text AS horizon, bound.below::text AS below, pending.pending, e.id::text AS id, e.type,
    e.task_id, e.agent_id, e.owner_user_id,
    json_build_object('id', e.id::text, 'type', e.type, 'at', event_time(e.at), 'data', e.data)::text AS json
  FROM bound CROSS JOIN horizon CROSS JOIN pending
  LEFT JOIN LATERAL (
    SELECT * FROM events
    WHERE organization_id = $1 AND id > greatest($2::bigint, horizon.through) AND id < bound.below
      ${taskFilter ? "AND task_id = $4" : ""}
    ORDER BY id LIMIT $3
  ) e ON true
  ORDER BY e.id`

/** An event of any organization, as `readAcross` reads it. */
export interface CrossEventRecord extends EventRecord {
  readonly organizationId: string
}

/**
 * The organizations that have events, as a recursive CTE `orgs(id)` (after `WITH RECURSIVE`; its last row is
 * null): a loose index scan of the primary key, two probes each, instead of reading every event.
 */
export const EVENT_ORGANIZATIONS = `orgs AS (
    (SELECT organization_id AS id FROM events ORDER BY organization_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.organization_id FROM events e WHERE e.organization_id > orgs.id ORDER BY e.organization_id LIMIT 1)
    FROM orgs WHERE orgs.id IS NOT NULL
  )`

/**
 * The committed events of every organization after one position ($1 after, $2 limit, $3 types), in id
 * order: ids are global (`xid << 20 | n`), so one position serves every organization. The organizations are
 * walked by a loose index scan of the primary key (two probes each), then each one's events after the
 * position read by the same key; `horizon` is the highest id retention pruned anywhere.
 */
const READ_ACROSS = `
  WITH RECURSIVE ${EVENT_ORGANIZATIONS},
  bound AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20 AS below)
  SELECT bound.below::text AS below,
    (SELECT coalesce(max(pruned_through), 0) FROM event_horizons)::text AS horizon,
    e.organization_id, e.id::text AS id, e.type, e.task_id, e.agent_id, e.owner_user_id,
    json_build_object('id', e.id::text, 'type', e.type, 'at', event_time(e.at), 'data', e.data)::text AS json
  FROM bound LEFT JOIN LATERAL (
    SELECT x.* FROM orgs, LATERAL (
      SELECT * FROM events
      WHERE organization_id = orgs.id AND id > $1::bigint AND id < bound.below AND type = ANY($3::text[])
      ORDER BY id LIMIT $2
    ) x
    WHERE orgs.id IS NOT NULL
    ORDER BY x.id LIMIT $2
  ) e ON true
  ORDER BY e.id`

/** At most this many events are pruned per statement. */
const PRUNE_BATCH = 5000

/** The event log's statements. A failed statement is a defect. */
export class EventRepo extends Effect.Service<EventRepo>()("events/EventRepo", {
  effect: Effect.gen(function*() {
    const pool = yield* PgPool
    const readOrganization = prepared<Row>(pool, "events_read", readText(false))
    const readTask = prepared<Row>(pool, "events_read_task", readText(true))

    /** Committed events of the organization (of one task: `taskId`) after `after`, at most `limit`. */
    const read = (organizationId: OrganizationId, after: bigint, limit: number, taskId?: TaskId) =>
      (taskId === undefined
        ? readOrganization([organizationId, after.toString(), limit])
        : readTask([organizationId, after.toString(), limit, taskId])).pipe(
          Effect.orDie,
          Effect.map((rows): EventPage => {
            const first = rows[0]!
            const horizon = BigInt(first.horizon)
            const events: Array<EventRecord> = []
            for (const r of rows) {
              if (r.id === null) continue
              events.push({
                id: BigInt(r.id),
                type: r.type,
                taskId: r.task_id,
                agentId: r.agent_id,
                ownerUserId: r.owner_user_id,
                json: r.json
              })
            }
            const full = events.length >= limit
            const start = after > horizon ? after : horizon
            const below = BigInt(first.below)
            const settled = below - 1n
            const next = full ? events[events.length - 1]!.id : settled > start ? settled : start
            return { events, next, full, pending: first.pending, horizon, below }
          })
        )

    const readAcrossStatement = prepared<Row & { readonly organization_id: string | null }>(
      pool,
      "events_read_across",
      READ_ACROSS
    )
    /**
     * Committed events of these types in every organization after `after` (a global position), at most
     * `limit`, for a reader of the whole cluster (the usage rollups). `next` as `read`'s; `horizon`: the
     * highest id pruned in any organization (above `after`: events were lost to retention).
     */
    const readAcross = (after: bigint, limit: number, types: ReadonlyArray<string>) =>
      readAcrossStatement([after.toString(), limit, types]).pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const first = rows[0]!
          const events: Array<CrossEventRecord> = []
          for (const r of rows) {
            if (r.id === null) continue
            events.push({
              organizationId: r.organization_id!,
              id: BigInt(r.id),
              type: r.type,
              taskId: r.task_id,
              agentId: r.agent_id,
              ownerUserId: r.owner_user_id,
              json: r.json
            })
          }
          const full = events.length >= limit
          const settled = BigInt(first.below) - 1n
          const next = full ? events[events.length - 1]!.id : settled > after ? settled : after
          return { events, next, full, horizon: BigInt(first.horizon) }
        })
      )

    const pruneBatch = prepared<{ readonly deleted: string }>(
      pool,
      "events_prune",
      `WITH doomed AS (
        SELECT organization_id, id FROM events WHERE at < now() - make_interval(secs => $1) LIMIT ${PRUNE_BATCH}
      ),
      deleted AS (
        DELETE FROM events e USING doomed d WHERE e.organization_id = d.organization_id AND e.id = d.id
        RETURNING e.organization_id, e.id
      ),
      horizons AS (
        INSERT INTO event_horizons (organization_id, pruned_through)
        SELECT organization_id, max(id) FROM deleted GROUP BY organization_id
        ON CONFLICT (organization_id) DO UPDATE
          SET pruned_through = greatest(event_horizons.pruned_through, excluded.pruned_through)
      )
      SELECT count(*)::text AS deleted FROM deleted`
    )

    /**
     * Deletes the events older than `retention`, a batch at a time, raising each organization's horizon in
     * the same statement. Safe on any number of nodes at once: a row is deleted once, horizons only rise.
     */
    const prune = (retention: Duration.Duration) =>
      Effect.gen(function*() {
        let total = 0
        for (;;) {
          const [row] = yield* pruneBatch([Duration.toSeconds(retention)])
          const deleted = Number(row?.deleted ?? 0)
          total += deleted
          if (deleted < PRUNE_BATCH) return total
        }
      }).pipe(Effect.orDie)

    const positionNow = prepared<{ readonly position: string }>(
      pool,
      "events_position",
      "SELECT ((pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 20) - 1)::text AS position"
    )
    /** The position of "now": what is committed below it is past, whatever commits from here on is after it. */
    const now = positionNow([]).pipe(Effect.map(([row]) => BigInt(row!.position)), Effect.orDie)

    const findTask = prepared<{ readonly agent_id: string; readonly status: string; readonly end_id: string | null }>(
      pool,
      "events_task",
      `SELECT t.agent_id, t.status, (
        SELECT e.id::text FROM events e
        WHERE e.task_id = t.id AND e.type IN ('task.completed', 'task.error', 'task.cancelled') LIMIT 1
      ) AS end_id
      FROM tasks t WHERE t.id = $1 AND t.organization_id = $2`
    )
    /**
     * The task's agent and status, and its end's event id when its end is in the log: a task that ended before
     * the log existed, or whose end was pruned, has none, and its stream must not wait for it.
     */
    const task = (organizationId: OrganizationId, id: TaskId) =>
      findTask([id, organizationId]).pipe(
        Effect.map(([row]) => row === undefined ? undefined : { ...row, has_end: row.end_id !== null }),
        Effect.orDie
      )

    const upsertListeners = prepared(
      pool,
      "events_listen",
      `WITH fresh AS (
        INSERT INTO event_listeners (organization_id, until)
        SELECT o, now() + make_interval(secs => $2) FROM unnest($1::uuid[]) AS o
        ON CONFLICT (organization_id) DO UPDATE SET until = greatest(event_listeners.until, excluded.until)
      )
      DELETE FROM event_listeners WHERE until < now() - interval '1 minute' AND organization_id <> ALL($1::uuid[])`
    )
    /** This node follows these organizations for `seconds` more: their commits notify (migration 0016). */
    const listen = (organizationIds: ReadonlyArray<string>, seconds: number) =>
      upsertListeners([organizationIds, seconds]).pipe(Effect.asVoid, Effect.orDie)

    return { read, readAcross, prune, now, task, listen } as const
  })
}) {}
