import { eventTriggers, triggerFunction } from "../../src/db/migrations/0021_event_writes.js"
import { compareVariants, withBackendProbe } from "./backendProbe.js"

/**
 * A probe of event-log layouts (issue 22), for looking into them, not a benchmark of record:
 * `node --import tsx bench/support/eventLayouts.ts [tasks per statement] [statements] [rounds]`.
 *
 * One backend writes tasks as the batched API statements do (tasks inserted executing, `tasks per statement`
 * at a time; then ended with their model calls in one statement), each statement its own transaction, with
 * asynchronous commit; what is measured is the backend's CPU time per task (/proc/<pid>/stat). Variants,
 * alternating in each round: the event triggers off; `rows`, the current triggers (a row per event); `batch`, one row
 * per statement, organization and half of the id range, its events a JSON array, in a table of its own;
 * `slim`, the current triggers writing no payload. The last two only measure writes: nothing reads them.
 */

const B = Number(process.argv[2] ?? "8")
const ITER = Number(process.argv[3] ?? "300")
const ROUNDS = Number(process.argv[4] ?? "5")
const TRIGGERS = [["tasks", "events_tasks_inserted"], ["tasks", "events_tasks_updated"], [
  "task_events",
  "events_task_events_inserted"
]]
const LATE = 524288
const current = eventTriggers("json_build_object", { errorCode: true })

const batchSetup = [
  `CREATE TABLE IF NOT EXISTS event_batches (organization_id uuid NOT NULL, id bigint NOT NULL, n int NOT NULL,
     at timestamptz NOT NULL DEFAULT now(), data json NOT NULL, PRIMARY KEY (organization_id, id)) WITH (toast_tuple_target = 8160)`,
  `ALTER TABLE event_batches ALTER COLUMN data SET STORAGE EXTERNAL`,
  `CREATE INDEX IF NOT EXISTS event_batches_at ON event_batches USING brin (at)`,
  `CREATE OR REPLACE FUNCTION events_next_ids(organization uuid, last boolean, k int) RETURNS bigint LANGUAGE plpgsql
  VOLATILE AS $$
  DECLARE
    n0 bigint := coalesce(nullif(current_setting('switchyard.event_n', true), ''), '0')::bigint;
    n bigint := n0 + CASE WHEN last THEN k::bigint << 20 ELSE k END;
    seen text := coalesce(current_setting('switchyard.event_orgs', true), '');
    kept text;
  BEGIN
    IF (n & 1048575) >= ${LATE} OR (n >> 20) >= ${LATE} THEN
      RAISE EXCEPTION 'too many events';
    END IF;
    kept := set_config('switchyard.event_n', n::text, true);
    IF strpos(seen, organization::text) = 0 THEN
      kept := set_config('switchyard.event_orgs', seen || organization::text || ' ', true);
      IF EXISTS (SELECT 1 FROM event_listeners l WHERE l.organization_id = organization AND l.until > now()) THEN
        PERFORM pg_notify('switchyard_events', organization::text);
      END IF;
    END IF;
    RETURN (pg_current_xact_id()::text::bigint << 20) + CASE WHEN last THEN ${LATE} + (n0 >> 20) + 1 ELSE (n0 & 1048575) + 1 END;
  END $$`
]
const batchFunction = ({ drafts, name, order }: { name: string; drafts: string; order?: string }) => `
  CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO event_batches (organization_id, id, n, data)
    SELECT g.organization_id, events_next_ids(g.organization_id, g.last, g.n), g.n, g.data FROM (
      SELECT d.organization_id, d.last, count(*)::int AS n,
        json_agg(json_build_object('type', d.type, 'task_id', d.task_id, 'agent_id', d.agent_id,
          'owner_user_id', d.owner_user_id, 'data', d.data)) AS data
      FROM (${drafts}${order === undefined ? "" : ` ORDER BY ${order}`}) d
      GROUP BY d.organization_id, d.last) g;
    RETURN NULL;
  END $$`

const LOOP = `
  CREATE OR REPLACE PROCEDURE probe_loop(n int, b int, org uuid, agent uuid) LANGUAGE plpgsql AS $$
  DECLARE
    ids uuid[];
    one int;
    md jsonb := '{"step":1,"provider":"scripted","model":"scripted","input_tokens":10,"output_tokens":2,
      "cached_tokens":0,"cost_usd":0,"duration_ms":1,"finish":"stop"}';
  BEGIN
    FOR i IN 1..n LOOP
      ids := ARRAY(SELECT gen_random_uuid() FROM generate_series(1, b));
      INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, agent_version,
        started_at, shard)
      SELECT x, org, agent, 'executing', 'api', 'u1', 'u1@example.com', 'hi', 1, now(), 0 FROM unnest(ids) x;
      COMMIT;
      WITH ended AS (
        UPDATE tasks SET status = 'completed', result = 'done', finished_at = now(), oidc_token = NULL
        WHERE id = ANY(ids) AND status NOT IN ('completed', 'error', 'cancelled') RETURNING id
      ),
      model_event AS (
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT x, 1, 'model_call', 's1', md FROM unnest(ids) x
        ON CONFLICT DO NOTHING
      )
      SELECT count(*) FROM ended INTO one;
      COMMIT;
    END LOOP;
  END $$`

await withBackendProbe("probe-layouts-", async (probe) => {
  for (const statement of batchSetup) await probe.client.query(statement)
  await compareVariants(probe, {
    variants: {
      off: TRIGGERS.map(([t, g]) => `ALTER TABLE ${t} DISABLE TRIGGER ${g}`),
      rows: current.map(triggerFunction),
      batch: current.map(batchFunction),
      slim: current.map((t) => triggerFunction(t).replace("d.owner_user_id, d.data", "d.owner_user_id, '{}'::json"))
    },
    reset: ["SET synchronous_commit = off", LOOP, ...TRIGGERS.map(([t, g]) => `ALTER TABLE ${t} ENABLE TRIGGER ${g}`)],
    run: () => probe.client.query("CALL probe_loop($1, $2, $3, $4)", [ITER, B, probe.organizationId, probe.agentId]),
    units: ITER * B,
    rounds: ROUNDS
  })
  const { rows } = await probe.client.query(
    "SELECT count(*)::int AS rows, sum(n)::int AS events, pg_total_relation_size('event_batches') AS bytes FROM event_batches"
  )
  const { rows: r2 } = await probe.client.query(
    "SELECT count(*)::int AS rows, pg_total_relation_size('events') AS bytes FROM events"
  )
  console.log("batches", rows[0], "events", r2[0])
})
