import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The event log (issue 22): every change a client may follow is an `events` row, written by the database
 * itself, in the statement (so the transaction) that makes the change. Triggers, not application code: any
 * writer gets them, the batched task statements and the nodes of a previous release included, so no change
 * commits without its event and no event without its change.
 *
 * Ids are gap-free for readers (src/events/EventLog.ts, docs/guides/events.md): an event's id is
 * `(xid << 20) + n`, its transaction's id (xid8) and its place in the transaction, so ids follow the order
 * in which transactions took their xid. A reader reads only below the oldest transaction still running
 * (`pg_snapshot_xmin`): below it, every transaction has committed or rolled back, and none can add a lower
 * id later. Within a transaction, a task's end is placed after everything else (the upper half of `n`), so
 * a task's stream can end at it without missing the model call recorded with it.
 *
 * The triggers are per statement, over transition tables: a batched statement that inserts or ends 64 tasks
 * runs each trigger once, with one INSERT into `events`, not 64 times. Each also sends `pg_notify` on
 * `switchyard_events` with the organization's id: delivered on commit, once per transaction and
 * organization (PostgreSQL folds identical notifications of one transaction), and never for a rollback;
 * only for organizations that a node follows (`event_listeners`): PostgreSQL serializes the commits of
 * notifying transactions (a lock taken at commit), which halved the throughput of one-statement
 * transactions in a measurement, so a change nobody follows does not pay it.
 *
 * `event_horizons` remembers, per organization, the highest id pruned by retention: a reader asking to
 * resume below it has lost events, and is told so instead of being sent what is left.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE events (
      organization_id uuid NOT NULL,
      id bigint NOT NULL,
      type text NOT NULL,
      at timestamptz NOT NULL DEFAULT now(),
      task_id uuid,
      agent_id uuid,
      -- a personal connection's owner: its events are theirs alone
      owner_user_id uuid,
      data jsonb NOT NULL,
      PRIMARY KEY (organization_id, id)
    )`
  yield* sql`CREATE INDEX events_task ON events (task_id, id) WHERE task_id IS NOT NULL`
  // retention deletes by time; rows come in time order, so a BRIN index costs next to nothing to keep
  yield* sql`CREATE INDEX events_at ON events USING brin (at)`
  // the organizations some node follows (an SSE stream, webhooks), kept fresh by those nodes: only their
  // events are notified. Unlogged: after a crash the nodes register again within seconds
  yield* sql`
    CREATE UNLOGGED TABLE event_listeners (
      organization_id uuid PRIMARY KEY,
      until timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE event_horizons (
      organization_id uuid PRIMARY KEY,
      pruned_through bigint NOT NULL
    )`

  // an instant as the API writes it (schema/Timestamp.ts): UTC, microseconds, `Z`
  yield* sql`
    CREATE FUNCTION event_time(at timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
      SELECT to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    $$`
  yield* sql`
    CREATE TYPE event_draft AS (
      organization_id uuid, type text, task_id uuid, agent_id uuid, owner_user_id uuid, data jsonb, last boolean
    )`
  // appends a statement's events, in the order given, each half of n after what the transaction took already
  // (the counters are transaction-local settings: gone at its end, undone with a rolled-back savepoint as the
  // rows are), and wakes the organizations' readers on commit
  yield* sql`
    CREATE FUNCTION events_append(drafts event_draft[]) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      xid bigint;
      early bigint;
      late bigint;
      early_count bigint;
      late_count bigint;
    BEGIN
      IF coalesce(cardinality(drafts), 0) = 0 THEN RETURN; END IF;
      SELECT count(*) FILTER (WHERE NOT d.last), count(*) FILTER (WHERE d.last)
        INTO early_count, late_count FROM unnest(drafts) d;
      xid := pg_current_xact_id()::text::bigint << 20;
      early := coalesce(nullif(current_setting('switchyard.event_early', true), ''), '0')::bigint;
      late := coalesce(nullif(current_setting('switchyard.event_late', true), ''), '0')::bigint;
      IF early + early_count >= 524288 OR late + late_count >= 524288 THEN
        RAISE EXCEPTION 'more than 524287 events of one kind in one transaction';
      END IF;
      IF early_count > 0 THEN
        PERFORM set_config('switchyard.event_early', (early + early_count)::text, true);
      END IF;
      IF late_count > 0 THEN
        PERFORM set_config('switchyard.event_late', (late + late_count)::text, true);
      END IF;
      INSERT INTO events (organization_id, id, type, task_id, agent_id, owner_user_id, data)
      SELECT d.organization_id,
        xid + CASE WHEN d.last THEN 524288 + late ELSE early END + row_number() OVER (PARTITION BY d.last ORDER BY d.o),
        d.type, d.task_id, d.agent_id, d.owner_user_id, d.data
      FROM unnest(drafts) WITH ORDINALITY AS d(organization_id, type, task_id, agent_id, owner_user_id, data, last, o);
      -- only where a node follows the organization: a notifying commit takes a lock that every other one waits for
      PERFORM pg_notify('switchyard_events', x.o::text)
      FROM (SELECT DISTINCT organization_id FROM unnest(drafts)) x(o)
      WHERE EXISTS (SELECT 1 FROM event_listeners l WHERE l.organization_id = x.o AND l.until > now());
    END $$`

  // a task's status as an event: its type, whether it ends the task, and its data
  yield* sql`
    CREATE FUNCTION task_status_draft(organization_id uuid, id uuid, agent_id uuid, status text, result text,
      finished_at timestamptz) RETURNS event_draft LANGUAGE sql STABLE AS $$
      SELECT ROW(organization_id, 'task.' || CASE WHEN status = 'executing' THEN 'started' ELSE status END,
        id, agent_id, NULL,
        CASE WHEN status IN ('completed', 'error', 'cancelled') THEN
          jsonb_build_object('task_id', id, 'agent_id', agent_id, 'status', status, 'result', left(result, 4096),
            'result_truncated', coalesce(length(result) > 4096, false),
            'finished_at', event_time(coalesce(finished_at, now())))
        ELSE jsonb_build_object('task_id', id, 'agent_id', agent_id, 'status', status) END,
        status IN ('completed', 'error', 'cancelled'))::event_draft
    $$`

  yield* sql`
    CREATE FUNCTION events_tasks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- a task inserted started (its run begins on the invoking node) is created, then started
      PERFORM events_append(ARRAY(
        SELECT e.draft FROM (SELECT row_number() OVER () AS r, * FROM new_tasks) t,
        LATERAL (
          SELECT 0 AS k, ROW(t.organization_id, 'task.created', t.id, t.agent_id, NULL,
            jsonb_build_object('task_id', t.id, 'agent_id', t.agent_id, 'agent_version', t.agent_version,
              'source', t.source, 'user_id', t.user_id, 'created_at', event_time(t.created_at)),
            false)::event_draft AS draft
          UNION ALL
          SELECT 1, task_status_draft(t.organization_id, t.id, t.agent_id, t.status, t.result, t.finished_at)
          WHERE t.status <> 'pending'
        ) e
        ORDER BY t.r, e.k));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_tasks_inserted AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION events_tasks_inserted()`

  // a status change is an event; back to executing after a decision is not (approval.decided says it)
  yield* sql`
    CREATE FUNCTION events_tasks_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM events_append(ARRAY(
        SELECT task_status_draft(n.organization_id, n.id, n.agent_id, n.status, n.result, n.finished_at)
        FROM new_tasks n JOIN old_tasks o ON o.id = n.id
        WHERE n.status IS DISTINCT FROM o.status AND NOT (o.status = 'waiting_approval' AND n.status = 'executing')
        ORDER BY n.id));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_tasks_updated AFTER UPDATE ON tasks
    REFERENCING OLD TABLE AS old_tasks NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION events_tasks_updated()`

  // the steps of a run: what was called, how it went, what it cost; not the arguments, texts and results
  // (the thread has them, for who may read it)
  yield* sql`
    CREATE FUNCTION events_task_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM events_append(ARRAY(
        SELECT ROW(t.organization_id, 'task.' || e.type, e.task_id, t.agent_id, NULL,
          CASE WHEN e.type = 'tool_call' THEN
            jsonb_build_object('task_id', e.task_id, 'agent_id', t.agent_id, 'step', e.data->'step',
              'name', e.data->'name', 'connection_id', e.data->'connection_id', 'operation_id',
              e.data->'operation_id', 'outcome', e.data->'outcome', 'status', e.data->'status',
              'duration_ms', e.data->'duration_ms')
          ELSE
            jsonb_build_object('task_id', e.task_id, 'agent_id', t.agent_id, 'step', e.data->'step',
              'provider', e.data->'provider', 'model', e.data->'model', 'input_tokens', e.data->'input_tokens',
              'output_tokens', e.data->'output_tokens', 'cached_tokens', e.data->'cached_tokens',
              'cost_usd', e.data->'cost_usd', 'duration_ms', e.data->'duration_ms', 'finish', e.data->'finish')
          END, false)::event_draft
        FROM new_events e JOIN tasks t ON t.id = e.task_id
        WHERE e.type IN ('tool_call', 'model_call')
        ORDER BY e.task_id, e.seq));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_task_events_inserted AFTER INSERT ON task_events REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_task_events_inserted()`

  yield* sql`
    CREATE FUNCTION events_approvals_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM events_append(ARRAY(
        SELECT ROW(a.organization_id, 'approval.requested', a.task_id, a.agent_id, NULL,
          jsonb_build_object('approval_id', a.id, 'task_id', a.task_id, 'agent_id', a.agent_id, 'tool', a.tool,
            'skill_id', a.skill_id, 'requested_at', event_time(a.requested_at), 'expires_at',
            event_time(a.expires_at)), false)::event_draft
        FROM new_approvals a ORDER BY a.requested_at, a.id));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_approvals_inserted AFTER INSERT ON approvals REFERENCING NEW TABLE AS new_approvals
    FOR EACH STATEMENT EXECUTE FUNCTION events_approvals_inserted()`
  yield* sql`
    CREATE FUNCTION events_approvals_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM events_append(ARRAY(
        SELECT ROW(n.organization_id, 'approval.decided', n.task_id, n.agent_id, NULL,
          jsonb_build_object('approval_id', n.id, 'task_id', n.task_id, 'agent_id', n.agent_id, 'tool', n.tool,
            'status', n.status, 'reason', n.reason, 'decided_at', event_time(coalesce(n.decided_at, now()))),
          false)::event_draft
        FROM new_approvals n JOIN old_approvals o ON o.id = n.id
        WHERE o.status = 'pending' AND n.status <> 'pending'
        ORDER BY n.id));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_approvals_updated AFTER UPDATE ON approvals
    REFERENCING OLD TABLE AS old_approvals NEW TABLE AS new_approvals
    FOR EACH STATEMENT EXECUTE FUNCTION events_approvals_updated()`

  yield* sql`
    CREATE FUNCTION events_connections_updated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM events_append(ARRAY(
        SELECT ROW(n.organization_id, 'connection.needs_reauthentication', NULL, NULL, n.owner_user_id,
          jsonb_build_object('connection_id', n.id, 'connector_id', n.connector_id, 'name', n.name,
            'access_scope', n.access_scope), false)::event_draft
        FROM new_connections n JOIN old_connections o ON o.id = n.id
        WHERE n.status = 'needs_reauthentication' AND o.status <> 'needs_reauthentication'
        ORDER BY n.id));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_connections_updated AFTER UPDATE ON connections
    REFERENCING OLD TABLE AS old_connections NEW TABLE AS new_connections
    FOR EACH STATEMENT EXECUTE FUNCTION events_connections_updated()`

  // the audit record whole, as GET /v1/audit-logs shows it: a SIEM takes the log as it is written
  yield* sql`
    CREATE FUNCTION events_audit_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM events_append(ARRAY(
        SELECT ROW(a.organization_id, 'audit.recorded', NULL, NULL, NULL,
          jsonb_build_object('id', a.id, 'seq', a.seq, 'time', event_time(a.time), 'organization_id',
            a.organization_id, 'actor', jsonb_build_object('type', a.actor_type, 'id', a.actor_id, 'key_id',
            a.actor_key_id), 'action', a.action, 'targets', a.targets, 'outcome', a.outcome, 'ip', a.ip,
            'user_agent', a.user_agent, 'request_id', a.request_id, 'details', a.details, 'prev_hash',
            a.prev_hash, 'hash', a.hash), false)::event_draft
        FROM new_audit a ORDER BY a.organization_id, a.seq));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER events_audit_inserted AFTER INSERT ON audit_events REFERENCING NEW TABLE AS new_audit
    FOR EACH STATEMENT EXECUTE FUNCTION events_audit_inserted()`
})
