import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Usage rollups off the task path (issue 24). 0020's statement triggers on `tasks`, `llm_usage` and
 * `connector_invocations` cost every task ~30% of its throughput; they go. The rollups stay, and a node
 * folds into them, every second, from what is written anyway (src/usage/UsageRepo.ts):
 *   - task ends: the event log (`task.completed|error|cancelled`, migration 0016), after a global position
 *     (event ids are gap-free for readers below `pg_snapshot_xmin`);
 *   - model calls and connector calls: the rows of `llm_usage` and `connector_invocations`, by a new `xid`
 *     column (the inserting transaction's id, a column default: no trigger), read only below
 *     `pg_snapshot_xmin`, in (xid, key) order after a stored position: the event log's technique.
 *
 * The hand-over is exact. The DROP TRIGGERs lock the three tables: every transaction that wrote them with a
 * trigger has ended (its deltas are committed), and none writes them again until this commits. Then:
 *   - the deltas already appended are folded here, once (and the tables kept, empty, for nodes of the
 *     previous release during a rolling upgrade: their reads and folds still find them);
 *   - rows of `llm_usage` and `connector_invocations` present now were counted by the triggers: their `xid`
 *     is 0 (the column's first default, a constant), later rows carry their transaction's id, and the folder
 *     reads only xid > 0;
 *   - events: a transaction below this snapshot's xmax either ended (its task ends had their deltas) or is
 *     still running (it could not write `tasks` yet: its ends come after, without a trigger). So the folder
 *     starts at `xmin << 20`, and between there and `xmax << 20` takes only the events of the transactions
 *     this snapshot saw running (`events_uncounted`).
 * A new grain too: `hour_all_users`, the hour rows summed over users (hourly reads of a whole organization).
 */
const FOLD_LOCK = 0x5717c4_20
const BUCKETS = 48
const histogram = (f: (i: number) => string) =>
  `ARRAY[${Array.from({ length: BUCKETS }, (_, i) => f(i + 1)).join(", ")}]::int[]`

type Fact = "model" | "task" | "connector"
const KEYS: Record<Fact, string> = {
  model: "organization_id, agent_id, user_id, source, provider, model",
  task: "organization_id, agent_id, user_id, source",
  connector: "organization_id, connector_id, agent_id, user_id, source"
}
const SUMS: Record<Fact, ReadonlyArray<string>> = {
  model: ["calls", "input_tokens", "output_tokens", "cached_tokens", "cost_usd"],
  task: ["completed", "error", "cancelled", "duration_ms"],
  connector: ["status_2xx", "status_3xx", "status_4xx", "status_5xx", "failed", "duration_ms"]
}

/** 0020's fold of one fact's deltas (all of them), as that release ran it. */
const foldDeltas = (fact: Fact) => {
  const keyColumns = KEYS[fact].split(", ").map((k) => k === "user_id" ? "g.user_id" : `t.${k}`).join(", ")
  const values = [...SUMS[fact], ...(fact === "task" ? ["duration_histogram"] : [])]
  const aggregates = [
    ...SUMS[fact].map((c) => `sum(${c})`),
    ...(fact === "task" ? [histogram((i) => `sum(duration_histogram[${i}])`)] : [])
  ]
  const updates = [
    ...SUMS[fact].map((c) => `${c} = r.${c} + excluded.${c}`),
    ...(fact === "task"
      ? [`duration_histogram = ${histogram((i) => `r.duration_histogram[${i}] + excluded.duration_histogram[${i}]`)}`]
      : [])
  ]
  return `
    WITH taken AS (DELETE FROM usage_${fact}_deltas RETURNING *)
    INSERT INTO usage_${fact}_rollups AS r (grain, period, ${KEYS[fact]}, ${values.join(", ")})
    SELECT g.grain, g.period, ${keyColumns}, ${aggregates.join(", ")}
    FROM taken t,
      LATERAL (VALUES ('hour', t.period, t.user_id), ('day', date_trunc('day', t.period, 'UTC'), t.user_id),
        ('day_all_users', date_trunc('day', t.period, 'UTC'), '')) AS g(grain, period, user_id)
    GROUP BY g.grain, g.period, ${keyColumns}
    ON CONFLICT (organization_id, grain, period, ${KEYS[fact].replace("organization_id, ", "")})
    DO UPDATE SET ${updates.join(", ")}`
}

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // a folder of the previous release finishes its round first
  yield* sql`SELECT pg_advisory_xact_lock(${FOLD_LOCK})`
  yield* sql`DROP TRIGGER IF EXISTS usage_tasks_ended ON tasks`
  yield* sql`DROP TRIGGER IF EXISTS usage_tasks_inserted_ended ON tasks`
  yield* sql`DROP TRIGGER IF EXISTS usage_llm_recorded ON llm_usage`
  yield* sql`DROP TRIGGER IF EXISTS usage_connector_called ON connector_invocations`
  yield* sql`DROP FUNCTION IF EXISTS usage_tasks_ended()`
  yield* sql`DROP FUNCTION IF EXISTS usage_tasks_inserted_ended()`
  yield* sql`DROP FUNCTION IF EXISTS usage_llm_recorded()`
  yield* sql`DROP FUNCTION IF EXISTS usage_connector_called()`

  // the rows present were counted (xid 0, a constant default: no table rewrite); later ones carry their
  // transaction's id. The indexes hold only the later ones: the folder's reads, in its order
  for (const [table, key] of [["llm_usage", "task_id, seq"], ["connector_invocations", "id"]] as const) {
    yield* sql.unsafe(`ALTER TABLE ${table} ADD COLUMN xid xid8 NOT NULL DEFAULT '0'`)
    yield* sql.unsafe(`ALTER TABLE ${table} ALTER COLUMN xid SET DEFAULT pg_current_xact_id()`)
    yield* sql.unsafe(`CREATE INDEX ${table}_xid ON ${table} (xid, ${key}) WHERE xid > '0'::xid8`)
  }

  for (const fact of ["model", "task", "connector"] as const) yield* sql.unsafe(foldDeltas(fact))

  // a new grain, `hour_all_users`: the hour rows summed over users, what an hourly read of the organization
  // takes (a 30-day hourly read summed ~600,000 rows of 200 users; now a fraction). Built from the hour rows
  for (const fact of ["model", "task", "connector"] as const) {
    const keys = KEYS[fact].replace("user_id", "''")
    const values = [...SUMS[fact], ...(fact === "task" ? ["duration_histogram"] : [])]
    const sums = [
      ...SUMS[fact].map((c) => `sum(${c})`),
      ...(fact === "task" ? [histogram((i) => `sum(duration_histogram[${i}])`)] : [])
    ]
    yield* sql.unsafe(`
      INSERT INTO usage_${fact}_rollups (grain, period, ${KEYS[fact]}, ${values.join(", ")})
      SELECT 'hour_all_users', period, ${keys}, ${sums.join(", ")}
      FROM usage_${fact}_rollups WHERE grain = 'hour'
      GROUP BY period, ${KEYS[fact].replace(", user_id", "")}`)
  }

  // the folder's positions: one row
  yield* sql`
    CREATE TABLE usage_fold_positions (
      id int PRIMARY KEY CHECK (id = 1),
      -- events: folded through this id; below events_uncounted_below, only the transactions listed
      events_after bigint NOT NULL,
      events_uncounted_below bigint NOT NULL,
      events_uncounted bigint[] NOT NULL,
      -- llm_usage: folded through this (xid, task_id, seq)
      model_xid xid8 NOT NULL,
      model_task_id uuid NOT NULL,
      model_seq int NOT NULL,
      -- connector_invocations: folded through this (xid, id)
      connector_xid xid8 NOT NULL,
      connector_id bigint NOT NULL,
      folded_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    INSERT INTO usage_fold_positions (id, events_after, events_uncounted_below, events_uncounted, model_xid,
      model_task_id, model_seq, connector_xid, connector_id)
    SELECT 1, (pg_snapshot_xmin(s)::text::bigint << 20) - 1, pg_snapshot_xmax(s)::text::bigint << 20,
      coalesce((SELECT array_agg(x::text::bigint) FROM pg_snapshot_xip(s) x), '{}'),
      '0', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 2147483647, '0', 9223372036854775807
    FROM pg_current_snapshot() s`
})
