import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Cheaper event writes (issue 22): the triggers of 0016, each one plain INSERT … SELECT over its transition
 * tables.
 *
 * Measured with bench/support/eventWrites.ts (the backend's CPU time for a sync invoke's writes, each statement
 * its own transaction, in one run): 0016's triggers cost about 590 µs per task, six times the task's own
 * statements, and nearly all of it per statement, not per row. Each trigger built an array of composite drafts and handed it to `events_append`,
 * which ran four more queries over it (a count, the INSERT with a window over `unnest`, the notify gate over
 * `unnest` again), each starting its executor anew, and with the array as a parameter each was planned again
 * on most calls (custom plans). Now each trigger is one statement without parameters (a generic plan, cached
 * for the session) and small plans: no window, no aggregate, no CTE, a sort only where a statement's rows need
 * one. The counter and the notify gate moved to `events_next_id`, called per row: simple expressions, and the
 * gate's one query once per transaction and organization. About 180 µs per task remain.
 *
 * Nothing a reader sees changes: the ids are still `(xid << 20) + n` in the order the statement's rows are
 * written, the end of a task still takes `n` from the upper half, the payloads are the same JSON, and the
 * notify is still sent only for followed organizations, once per transaction. The two counters (events
 * before, and task ends after, the half) are one transaction-local setting, `switchyard.event_n` =
 * `late << 20 | early`. `event_time` is declared STABLE (as its body, to_char, is), so it is inlined instead
 * of called: a quarter of the time, and the readers' statements get it too.
 */

/** The upper half of an event's place in its transaction: a task's end, after everything else. */
const LATE = 524288

/**
 * The id of the next event of the transaction, of the organization's: `(xid << 20) + n`, n counted in the
 * lower half, or for a task's end (`last`) in the upper one. Called per row, in the order the rows reach it.
 * Refuses a transaction past either half. The first event of each organization in the transaction also
 * sends the wake-up if a node follows the organization (`event_listeners`): the one query here, once per
 * transaction and organization (`switchyard.event_orgs` remembers which were looked up); everything else is
 * simple expressions, a few microseconds. Both settings are transaction-local, undone with a rolled-back
 * savepoint as its rows and notifications are.
 */
const NEXT_ID = `
  CREATE OR REPLACE FUNCTION events_next_id(organization uuid, last boolean) RETURNS bigint LANGUAGE plpgsql
  VOLATILE AS $$
  DECLARE
    n bigint := coalesce(nullif(current_setting('switchyard.event_n', true), ''), '0')::bigint
      + CASE WHEN last THEN 1048576 ELSE 1 END;
    seen text := coalesce(current_setting('switchyard.event_orgs', true), '');
    kept text;
  BEGIN
    IF (n & 1048575) >= ${LATE} OR (n >> 20) >= ${LATE} THEN
      RAISE EXCEPTION 'more than ${LATE - 1} events of one kind in one transaction';
    END IF;
    kept := set_config('switchyard.event_n', n::text, true);
    IF strpos(seen, organization::text) = 0 THEN
      kept := set_config('switchyard.event_orgs', seen || organization::text || ' ', true);
      -- only where a node follows the organization: a notifying commit takes a lock that every other one waits for
      IF EXISTS (SELECT 1 FROM event_listeners l WHERE l.organization_id = organization AND l.until > now()) THEN
        PERFORM pg_notify('switchyard_events', organization::text);
      END IF;
    END IF;
    RETURN (pg_current_xact_id()::text::bigint << 20) + CASE WHEN last THEN ${LATE} + (n >> 20) ELSE n & 1048575 END;
  END $$`

/**
 * A trigger function appending the events of `drafts` (a SELECT of organization_id, type, task_id, agent_id,
 * owner_user_id, data, last, and what `order` needs), numbered in `order`, or without it in the order the
 * plan produces the rows (where that order is fixed by its shape, or does not matter).
 */
export const triggerFunction = ({ drafts, name, order }: EventTrigger) => `
  CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO events (organization_id, id, type, task_id, agent_id, owner_user_id, data)
    SELECT d.organization_id, events_next_id(d.organization_id, d.last), d.type, d.task_id, d.agent_id,
      d.owner_user_id, d.data
    FROM (${drafts}${order === undefined ? "" : ` ORDER BY ${order}`}) d;
    RETURN NULL;
  END $$`

const TERMINAL = "('completed', 'error', 'cancelled')"

/** A task's status as an event (`t` a row of tasks): its type, and its data built with `json`. */
const statusType = (t: string) => `'task.' || CASE WHEN ${t}.status = 'executing' THEN 'started' ELSE ${t}.status END`
const statusData = (t: string, json: string, errorCode: boolean) => `
  CASE WHEN ${t}.status IN ${TERMINAL} THEN
    ${json}('task_id', ${t}.id, 'agent_id', ${t}.agent_id, 'status', ${t}.status, 'result',
      left(${t}.result, 4096), 'result_truncated', coalesce(length(${t}.result) > 4096, false),${
  errorCode ?
    `
      'error_code', ${t}.error_code,` :
    ""
}
      'finished_at', event_time(coalesce(${t}.finished_at, now())))
  ELSE ${json}('task_id', ${t}.id, 'agent_id', ${t}.agent_id, 'status', ${t}.status) END`

/**
 * What each event trigger appends: `drafts`, a SELECT of organization_id, type, task_id, agent_id,
 * owner_user_id, data (built with `json`, the JSON builder function) and last, numbered in `order` or without
 * it in the order the plan produces the rows.
 */
export interface EventTrigger {
  readonly name: string
  readonly drafts: string
  readonly order?: string
}

/** `errorCode`: a task's end carries its `error_code` (the column of migration 0040). */
export const eventTriggers = (json: string, { errorCode = false } = {}): ReadonlyArray<EventTrigger> => [
  // a task inserted started (its run begins on the invoking node) is created, then started (or ended)
  {
    name: "events_tasks_inserted",
    // in the order inserted, each task's created before its status: a nested loop over the transition table
    // (in the order its rows were written) with the values listed (in their order) joined to each row, the
    // one plan a lateral join allows
    drafts: `SELECT t.organization_id, CASE WHEN k.k = 0 THEN 'task.created' ELSE ${statusType("t")} END AS type,
      t.id AS task_id, t.agent_id, NULL::uuid AS owner_user_id,
      CASE WHEN k.k = 0 THEN
        ${json}('task_id', t.id, 'agent_id', t.agent_id, 'agent_version', t.agent_version,
          'source', t.source, 'user_id', t.user_id, 'created_at', event_time(t.created_at))
      ELSE ${statusData("t", json, errorCode)} END AS data,
      k.k = 1 AND t.status IN ${TERMINAL} AS last
    FROM new_tasks t CROSS JOIN LATERAL (VALUES (0, true), (1, t.status <> 'pending')) k(k, present)
    WHERE k.present`
  },

  // a status change is an event; back to executing after a decision is not (approval.decided says it)
  {
    name: "events_tasks_updated",
    drafts: `SELECT n.organization_id, ${statusType("n")} AS type, n.id AS task_id, n.agent_id,
      NULL::uuid AS owner_user_id, ${statusData("n", json, errorCode)} AS data, n.status IN ${TERMINAL} AS last
    FROM new_tasks n JOIN old_tasks o ON o.id = n.id
    WHERE n.status IS DISTINCT FROM o.status AND NOT (o.status = 'waiting_approval' AND n.status = 'executing')`
  },

  // the steps of a run: what was called, how it went, what it cost; not the arguments, texts and results
  {
    name: "events_task_events_inserted",
    drafts: `SELECT t.organization_id, 'task.' || e.type AS type, e.task_id, t.agent_id, NULL::uuid AS owner_user_id,
      CASE WHEN e.type = 'tool_call' THEN
        ${json}('task_id', e.task_id, 'agent_id', t.agent_id, 'step', e.data->'step',
          'name', e.data->'name', 'connection_id', e.data->'connection_id', 'operation_id',
          e.data->'operation_id', 'outcome', e.data->'outcome', 'status', e.data->'status',
          'duration_ms', e.data->'duration_ms')
      ELSE
        ${json}('task_id', e.task_id, 'agent_id', t.agent_id, 'step', e.data->'step',
          'provider', e.data->'provider', 'model', e.data->'model', 'input_tokens', e.data->'input_tokens',
          'output_tokens', e.data->'output_tokens', 'cached_tokens', e.data->'cached_tokens',
          'cost_usd', e.data->'cost_usd', 'duration_ms', e.data->'duration_ms', 'finish', e.data->'finish')
      END AS data, false AS last, e.seq
    FROM new_events e JOIN tasks t ON t.id = e.task_id
    WHERE e.type IN ('tool_call', 'model_call')`,
    order: "task_id, seq"
  },

  {
    name: "events_approvals_inserted",
    drafts: `SELECT a.organization_id, 'approval.requested' AS type, a.task_id, a.agent_id, NULL::uuid AS owner_user_id,
      ${json}('approval_id', a.id, 'task_id', a.task_id, 'agent_id', a.agent_id, 'tool', a.tool,
        'skill_id', a.skill_id, 'requested_at', event_time(a.requested_at), 'expires_at',
        event_time(a.expires_at)) AS data, false AS last, a.requested_at, a.id
    FROM new_approvals a`,
    order: "requested_at, id"
  },

  {
    name: "events_approvals_updated",
    drafts: `SELECT n.organization_id, 'approval.decided' AS type, n.task_id, n.agent_id, NULL::uuid AS owner_user_id,
      ${json}('approval_id', n.id, 'task_id', n.task_id, 'agent_id', n.agent_id, 'tool', n.tool,
        'status', n.status, 'reason', n.reason, 'decided_at', event_time(coalesce(n.decided_at, now()))) AS data,
      false AS last, n.id
    FROM new_approvals n JOIN old_approvals o ON o.id = n.id
    WHERE o.status = 'pending' AND n.status <> 'pending'`,
    order: "id"
  },

  {
    name: "events_connections_updated",
    drafts: `SELECT n.organization_id, 'connection.needs_reauthentication' AS type, NULL::uuid AS task_id,
      NULL::uuid AS agent_id, n.owner_user_id,
      ${json}('connection_id', n.id, 'connector_id', n.connector_id, 'name', n.name,
        'access_scope', n.access_scope) AS data, false AS last, n.id
    FROM new_connections n JOIN old_connections o ON o.id = n.id
    WHERE n.status = 'needs_reauthentication' AND o.status <> 'needs_reauthentication'`,
    order: "id"
  },

  // the audit record whole, as GET /v1/audit-logs shows it: a SIEM takes the log as it is written
  {
    name: "events_audit_inserted",
    drafts: `SELECT a.organization_id, 'audit.recorded' AS type, NULL::uuid AS task_id, NULL::uuid AS agent_id,
      NULL::uuid AS owner_user_id,
      ${json}('id', a.id, 'seq', a.seq, 'time', event_time(a.time), 'organization_id',
        a.organization_id, 'actor', ${json}('type', a.actor_type, 'id', a.actor_id, 'key_id',
        a.actor_key_id), 'action', a.action, 'targets', a.targets, 'outcome', a.outcome, 'ip', a.ip,
        'user_agent', a.user_agent, 'request_id', a.request_id, 'details', a.details, 'prev_hash',
        a.prev_hash, 'hash', a.hash) AS data, false AS last, a.seq
    FROM new_audit a`,
    order: "organization_id, seq"
  }
]

/** `events_append(event_draft[])`: drafts appended as 0016 took them, `data` the payload's expression. */
export const eventsAppend = (data: string) =>
  `CREATE OR REPLACE FUNCTION events_append(drafts event_draft[]) RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO events (organization_id, id, type, task_id, agent_id, owner_user_id, data)
    SELECT d.organization_id, events_next_id(d.organization_id, d.last), d.type, d.task_id, d.agent_id,
      d.owner_user_id, ${data}
    FROM (
      SELECT * FROM unnest(drafts) WITH ORDINALITY
        AS x(organization_id, type, task_id, agent_id, owner_user_id, data, last, o)
      ORDER BY o
    ) d;
  END $$`

export const statements: ReadonlyArray<string> = [
  // inlined where it is used (to_char is STABLE: an IMMUTABLE wrapper is called, not inlined); same text
  `CREATE OR REPLACE FUNCTION event_time(at timestamptz) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
  $$`,
  NEXT_ID,
  ...eventTriggers("jsonb_build_object").map(triggerFunction),

  // drafts appended as 0016 took them (tests and benches write events with it), on the same counter
  eventsAppend("d.data"),
  // no trigger builds drafts of task statuses any more
  "DROP FUNCTION IF EXISTS task_status_draft(uuid, uuid, uuid, text, text, timestamptz)"
]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement)
})
