import { statements as eventWrites0021 } from "../../src/db/migrations/0021_event_writes.js"
import { statements as eventWrites } from "../../src/db/migrations/0029_event_json.js"
import { compareVariants, withBackendProbe } from "./backendProbe.js"
import { functionsOf0016 } from "./events0016.js"

/**
 * A probe of what the event triggers cost the database (issue 22), for looking into them, not a benchmark
 * of record: `node --import tsx bench/support/eventWrites.ts [tasks] [rounds]`.
 *
 * One backend runs a sync invoke's writes (the task inserted executing; its end with the model call that
 * ended it: the statements of src/tasks/TaskRepo.ts, reduced to what the triggers see) `tasks` times in a
 * procedure, each statement its own transaction as in the API (what is set up per transaction counts:
 * a first version of this probe ran them all in one transaction and missed it), with asynchronous commit, so
 * no flush, client or network is in the figure; what is measured is the backend's CPU time
 * (/proc/<pid>/stat), which a busy machine disturbs far less than the wall clock. Variants, alternating in
 * each round: the triggers disabled, the triggers of 0016 (their functions as 0016 wrote them, put back),
 * those of 0021, and those of 0029 (the current ones; `events.data` is `jsonb` for the first two, as they wrote
 * it). Prints the median CPU µs per task of each, and the triggers' share over "off".
 * Each `--also "<sql>"` adds a variant (`+1`, `+2`, …): 0029 with that statement run after it (e.g. a function
 * replaced; a statement that is not undone by the next variant's, such as `DROP INDEX`, stays for all rounds
 * after it, so give it alone; the probe's node is thrown away after).
 */
const argv = process.argv.slice(2)
const also = argv.flatMap((a, i) => (a === "--also" && argv[i + 1] !== undefined ? [argv[i + 1]!] : []))
const [tasksArg, roundsArg] = argv.filter((a, i) => /^\d+$/.test(a) && argv[i - 1] !== "--also").map(Number)
const TASKS = tasksArg || 2000
const ROUNDS = roundsArg || 6

const TRIGGERS: ReadonlyArray<readonly [string, string]> = [
  ["tasks", "events_tasks_inserted"],
  ["tasks", "events_tasks_updated"],
  ["task_events", "events_task_events_inserted"]
]

/** `events.data` as 0016 and 0021 wrote it (0029 made it `json`). */
const JSONB = "ALTER TABLE events ALTER COLUMN data TYPE jsonb USING data::jsonb"

const LOOP = `
  CREATE OR REPLACE PROCEDURE probe_loop(n int, org uuid, agent uuid) LANGUAGE plpgsql AS $$
  DECLARE
    tid uuid;
    md jsonb := '{"step":1,"provider":"scripted","model":"scripted","input_tokens":10,"output_tokens":2,
      "cached_tokens":0,"cost_usd":0,"duration_ms":1,"finish":"stop"}';
    one int;
  BEGIN
    FOR i IN 1..n LOOP
      tid := gen_random_uuid();
      INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, agent_version,
        started_at, shard)
      VALUES (tid, org, agent, 'executing', 'api', 'u1', 'u1@example.com', 'hi', 1, now(), 0);
      COMMIT;
      WITH ended AS (
        UPDATE tasks SET status = 'completed', result = 'done', finished_at = now(), oidc_token = NULL
        WHERE id = tid AND status NOT IN ('completed', 'error', 'cancelled') RETURNING id
      ),
      model_event AS (
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT tid, coalesce((SELECT max(seq) FROM task_events e WHERE e.task_id = tid), 0) + 1, 'model_call',
          's1', md
        ON CONFLICT DO NOTHING
      )
      SELECT 1 FROM ended INTO STRICT one;
      COMMIT;
    END LOOP;
  END $$`

const main = () =>
  withBackendProbe("probe-events-", async (probe) => {
    await compareVariants(probe, {
      variants: {
        off: TRIGGERS.map(([table, trigger]) => `ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`),
        "0016": [JSONB, ...functionsOf0016()],
        "0021": [JSONB, ...eventWrites0021],
        "0029": eventWrites,
        ...Object.fromEntries(also.map((statement, i) => [`+${i + 1}`, [...eventWrites, statement]]))
      },
      // each statement its own transaction, as the API's: what is set up per transaction counts
      reset: [
        "SET synchronous_commit = off",
        LOOP,
        ...TRIGGERS.map(([table, trigger]) => `ALTER TABLE ${table} ENABLE TRIGGER ${trigger}`)
      ],
      run: () => probe.client.query("CALL probe_loop($1, $2, $3)", [TASKS, probe.organizationId, probe.agentId]),
      units: TASKS,
      rounds: ROUNDS
    })
  })

await main()
