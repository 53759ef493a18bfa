import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Usage rollups (issue 24): what `GET /v1/usage` reads, kept incrementally, never by scanning raw rows per
 * request. Three facts, each in its own table by UTC hour, day, and day summed over users (`day_all_users`):
 *   - `usage_model_rollups`: model calls, tokens and cost (from `llm_usage`, at the record's `at`);
 *   - `usage_task_rollups`: ended tasks by final status, and a histogram of their durations (at `finished_at`);
 *   - `usage_connector_rollups`: connector calls by status class (from `connector_invocations`, at `created_at`).
 *
 * How they are kept: statement triggers over transition tables (as the event log's, 0016) append one row per
 * key per statement to a `*_deltas` table, in the statement (so the transaction) that ends the tasks or
 * records the calls. Appending only: many task ends at once never wait for each other on a hot rollup row's
 * lock, which they would if the triggers upserted the rollups directly (the lock is held to the commit). A
 * node folds the deltas into the rollups every second (src/usage/UsageFolder.ts: one DELETE … RETURNING and
 * upsert per table, under a try-lock so one node at a time); readers add the few deltas not yet folded, so
 * a read never lags behind the writes it can see.
 *
 * Missing dimensions are stored as the nil uuid / '' (a key column must not be NULL) and read back as null.
 *
 * Durations: `duration_histogram` counts tasks in 48 log-spaced buckets (usage_duration_bucket): bucket 1 is
 * under 10 ms, bucket i ≥ 2 is [10·2^((i-2)/2), 10·2^((i-1)/2)) ms (a factor √2 wide), the last open-ended
 * (from about 23 h). Percentiles are read from merged histograms (src/usage/DurationHistogram.ts).
 */
const BUCKETS = 48
const histogramOf = (bucket: string) =>
  `ARRAY[${
    Array.from({ length: BUCKETS }, (_, i) => `count(*) FILTER (WHERE ${bucket} = ${i + 1})`).join(", ")
  }]::int[]`

const MODEL_KEYS = "organization_id, agent_id, user_id, source, provider, model"
const MODEL_VALUES = "calls, input_tokens, output_tokens, cached_tokens, cost_usd"
const TASK_KEYS = "organization_id, agent_id, user_id, source"
const TASK_VALUES = "completed, error, cancelled, duration_ms, duration_histogram"
const CONNECTOR_KEYS = "organization_id, connector_id, agent_id, user_id, source"
const CONNECTOR_VALUES = "status_2xx, status_3xx, status_4xx, status_5xx, failed, duration_ms"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const dims = {
    model: `organization_id uuid NOT NULL, agent_id uuid NOT NULL, user_id text NOT NULL, source text NOT NULL,
      provider text NOT NULL, model text NOT NULL`,
    task: `organization_id uuid NOT NULL, agent_id uuid NOT NULL, user_id text NOT NULL, source text NOT NULL`,
    connector: `organization_id uuid NOT NULL, connector_id uuid NOT NULL, agent_id uuid NOT NULL,
      user_id text NOT NULL, source text NOT NULL`
  }
  const measures = {
    model: `calls bigint NOT NULL, input_tokens bigint NOT NULL, output_tokens bigint NOT NULL,
      cached_tokens bigint NOT NULL, cost_usd numeric(20, 8) NOT NULL`,
    task: `completed bigint NOT NULL, error bigint NOT NULL, cancelled bigint NOT NULL,
      duration_ms double precision NOT NULL, duration_histogram int[] NOT NULL`,
    connector: `status_2xx bigint NOT NULL, status_3xx bigint NOT NULL, status_4xx bigint NOT NULL,
      status_5xx bigint NOT NULL, failed bigint NOT NULL, duration_ms double precision NOT NULL`
  }
  const keys = { model: MODEL_KEYS, task: TASK_KEYS, connector: CONNECTOR_KEYS }
  for (const fact of ["model", "task", "connector"] as const) {
    // grain 'hour', 'day', or 'day_all_users' (the day's rows summed over users, user_id '': what the
    // organization-wide reads take, a fraction of the rows); period: the bucket's start (UTC). The key leads
    // with what every read filters by; a second index serves the reads of one person's usage
    yield* sql.unsafe(`
      CREATE TABLE usage_${fact}_rollups (
        grain text NOT NULL, period timestamptz NOT NULL, ${dims[fact]}, ${measures[fact]},
        PRIMARY KEY (organization_id, grain, period, ${keys[fact].replace("organization_id, ", "")})
      )`)
    yield* sql.unsafe(
      `CREATE INDEX usage_${fact}_rollups_user ON usage_${fact}_rollups (organization_id, user_id, grain, period)`
    )
    // append-only; no index: the folder takes them all, readers scan the few not yet taken
    yield* sql.unsafe(`
      CREATE TABLE usage_${fact}_deltas (period timestamptz NOT NULL, ${dims[fact]}, ${measures[fact]})
      WITH (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0)`)
  }

  yield* sql.unsafe(`
    CREATE FUNCTION usage_duration_bucket(ms double precision) RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN ms < 10 THEN 1 ELSE least(${BUCKETS}, floor(2 * ln(ms / 10) / ln(2))::int + 2) END
    $$`)
  // a task id as the connector records it (text): a uuid, or nothing to join
  yield* sql`
    CREATE FUNCTION usage_task_uuid(id text) RETURNS uuid LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE WHEN id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN id::uuid END
    $$`

  // the aggregates of each fact over a set of raw rows, as `SELECT … FROM <rows> GROUP BY` bodies
  const modelSelect = (period: string, rows: string) => `
    SELECT ${period}, u.organization_id, u.agent_id, coalesce(t.user_id, ''), coalesce(t.source, ''), u.provider,
      u.model, count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cached_tokens), sum(u.cost_usd)
    FROM ${rows} u LEFT JOIN tasks t ON t.id = u.task_id
    GROUP BY 1, 2, 3, 4, 5, 6, 7`
  const taskSelect = (period: string, rows: string, where: string) => `
    SELECT ${period}, n.organization_id, n.agent_id, n.user_id, n.source,
      count(*) FILTER (WHERE n.status = 'completed'), count(*) FILTER (WHERE n.status = 'error'),
      count(*) FILTER (WHERE n.status = 'cancelled'), coalesce(sum(x.ms), 0), ${histogramOf("x.bucket")}
    FROM ${rows},
      LATERAL (SELECT greatest(0, extract(epoch FROM n.finished_at - n.created_at) * 1000)::double precision AS ms) d,
      LATERAL (SELECT d.ms, usage_duration_bucket(d.ms) AS bucket) x
    WHERE ${where}
    GROUP BY 1, 2, 3, 4, 5`
  const connectorSelect = (period: string, rows: string) => `
    SELECT ${period}, c.organization_id, c.connector_id,
      coalesce(t.agent_id, '00000000-0000-0000-0000-000000000000'::uuid), coalesce(t.user_id, c.user_id::text, ''),
      coalesce(t.source, ''),
      count(*) FILTER (WHERE c.status < 300), count(*) FILTER (WHERE c.status BETWEEN 300 AND 399),
      count(*) FILTER (WHERE c.status BETWEEN 400 AND 499), count(*) FILTER (WHERE c.status >= 500),
      count(*) FILTER (WHERE c.status IS NULL), coalesce(sum(c.duration_ms), 0)
    FROM ${rows} c LEFT JOIN tasks t ON t.id = usage_task_uuid(c.task_id)
    GROUP BY 1, 2, 3, 4, 5, 6`
  const hour = (column: string) => `date_trunc('hour', ${column}, 'UTC')`

  yield* sql.unsafe(`
    CREATE FUNCTION usage_llm_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO usage_model_deltas (period, ${MODEL_KEYS}, ${MODEL_VALUES})
      ${modelSelect(hour("u.at"), "new_usage")};
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER usage_llm_recorded AFTER INSERT ON llm_usage REFERENCING NEW TABLE AS new_usage
    FOR EACH STATEMENT EXECUTE FUNCTION usage_llm_recorded()`

  // a task counts once, when it ends (finished_at set); its duration from creation to end
  yield* sql.unsafe(`
    CREATE FUNCTION usage_tasks_ended() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO usage_task_deltas (period, ${TASK_KEYS}, ${TASK_VALUES})
      ${
    taskSelect(
      hour("n.finished_at"),
      "new_tasks n JOIN old_tasks o ON o.id = n.id",
      "n.finished_at IS NOT NULL AND o.finished_at IS NULL"
    )
  };
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER usage_tasks_ended AFTER UPDATE ON tasks
    REFERENCING OLD TABLE AS old_tasks NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION usage_tasks_ended()`
  // rare (the API inserts tasks unfinished), but a task inserted ended counts too
  yield* sql.unsafe(`
    CREATE FUNCTION usage_tasks_inserted_ended() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO usage_task_deltas (period, ${TASK_KEYS}, ${TASK_VALUES})
      ${taskSelect(hour("n.finished_at"), "new_tasks n", "n.finished_at IS NOT NULL")};
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER usage_tasks_inserted_ended AFTER INSERT ON tasks REFERENCING NEW TABLE AS new_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION usage_tasks_inserted_ended()`

  yield* sql.unsafe(`
    CREATE FUNCTION usage_connector_called() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO usage_connector_deltas (period, ${CONNECTOR_KEYS}, ${CONNECTOR_VALUES})
      ${connectorSelect(hour("c.created_at"), "new_calls")};
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER usage_connector_called AFTER INSERT ON connector_invocations REFERENCING NEW TABLE AS new_calls
    FOR EACH STATEMENT EXECUTE FUNCTION usage_connector_called()`

  // the backfill: what an upgraded database holds already, aggregated once by hour into the deltas, which
  // the first fold spreads into every grain as it does any delta (readers add the deltas meanwhile). The
  // triggers exist first, in this transaction: their tables' writers wait for it, so no row is counted twice
  // or missed
  yield* sql.unsafe(`
    INSERT INTO usage_model_deltas (period, ${MODEL_KEYS}, ${MODEL_VALUES}) ${modelSelect(hour("u.at"), "llm_usage")}`)
  yield* sql.unsafe(`
    INSERT INTO usage_task_deltas (period, ${TASK_KEYS}, ${TASK_VALUES})
    ${taskSelect(hour("n.finished_at"), "tasks n", "n.finished_at IS NOT NULL")}`)
  yield* sql.unsafe(`
    INSERT INTO usage_connector_deltas (period, ${CONNECTOR_KEYS}, ${CONNECTOR_VALUES})
    ${connectorSelect(hour("c.created_at"), "connector_invocations")}`)
})
