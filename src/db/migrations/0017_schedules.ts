import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Schedules (issue 24): an agent run on a cron expression or an interval.
 *   - `schedules.next_run_at`: when a node should next look at the schedule (its next run, jitter added; sooner
 *     while a run waits in `buffer_one`); null while paused or done. Nodes claim due rows by its index with
 *     `FOR UPDATE SKIP LOCKED`: none scans every schedule.
 *   - `schedule_ticks`: one row per run decided, unique by (schedule_id, scheduled_for), written and committed
 *     before its task is made; the task's idempotency key is derived from the same pair, so a tick makes one
 *     task at most, and a tick left `pending` (its node died) is made by any node later.
 *   - `tasks.schedule_id`: the schedule a task is a run of, listed by `GET /v1/tasks?schedule_id=`.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE schedules (
      id uuid PRIMARY KEY,
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      agent_id uuid NOT NULL,
      name text NOT NULL,
      cron text,
      every_ms bigint,
      timezone text NOT NULL,
      input_text text NOT NULL,
      user_id text NOT NULL,
      user_email text NOT NULL,
      enabled boolean NOT NULL,
      start_at timestamptz,
      end_at timestamptz,
      jitter_ms bigint NOT NULL,
      overlap text NOT NULL,
      catchup_window_ms bigint NOT NULL,
      created_by uuid,
      created_by_key text NOT NULL,
      next_tick timestamptz,
      next_run_at timestamptz,
      last_task_id uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((cron IS NULL) <> (every_ms IS NULL))
    )`
  yield* sql`CREATE INDEX schedules_due ON schedules (next_run_at) WHERE next_run_at IS NOT NULL`
  yield* sql`CREATE INDEX schedules_organization ON schedules (organization_id, created_at)`
  yield* sql`
    CREATE TABLE schedule_ticks (
      schedule_id uuid NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
      scheduled_for timestamptz NOT NULL,
      kind text NOT NULL,
      status text NOT NULL,
      task_id uuid,
      reason text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (schedule_id, scheduled_for)
    )`
  // the ticks not made yet: few at any time, read by the sweep for those whose node died
  yield* sql`
    CREATE INDEX schedule_ticks_open ON schedule_ticks (schedule_id, created_at)
    WHERE status IN ('pending', 'buffered')`
  yield* sql`ALTER TABLE tasks ADD COLUMN schedule_id uuid`
  yield* sql`CREATE INDEX tasks_schedule ON tasks (schedule_id, created_at DESC, id DESC) WHERE schedule_id IS NOT NULL`
})
