import { afterAll, describe, expect, it } from "vitest"
import { call, withDatabase } from "../access/support.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { createSchedule, createScriptedAgent, until } from "./support.js"

/** The key a tick's task carries (src/schedules/ScheduleRepo.ts `tickKey`). */
const tickKey = (scheduleId: string, at: Date) => `schedule ${scheduleId} ${at.toISOString()}`

/**
 * The scheduler makes a claim's ticks into tasks in bulk, in the claim's transaction. A claimed batch holds
 * five schedules due at the same tick T; two of them already have T's task, made by the invoke path:
 *   - `pending`: T's tick is recorded `pending` and its task was made (its node died before recording it);
 *   - `keyed`: T's task exists under T's key, and no tick is recorded.
 * Neither may get a second task, and the other three must get theirs, in the same batch.
 */
describe("the bulk path: a claim's ticks made into tasks together", () => {
  let node: TestNode | undefined
  afterAll(() => node?.stop())

  it("a batch where ticks already have their task makes no second task and loses none of the others", async () => {
    node = await startTestNode({ SWITCHYARD_SCHEDULE_STALE_TICK: "2 seconds" })
    const org = await node.bootstrap()
    const agentId = await createScriptedAgent(node, org.api_key)
    const schedules: Array<{ id: string }> = []
    // yearly: none is due until the test moves them all to T at once
    for (let i = 0; i < 5; i++) {
      schedules.push(await createSchedule(node, org.api_key, { name: `b${i}`, agent_id: agentId, cron: "0 0 1 1 *" }))
    }
    const [pending, keyed, ...others] = schedules as [{ id: string }, { id: string }, ...Array<{ id: string }>]
    // T's tasks of the first two, made through the invoke path (a manual run), then given T's key
    const made: Record<string, string> = {}
    for (const s of [pending, keyed]) {
      const r = await call(node, org.api_key, "POST", `/v1/schedules/${s.id}/trigger`)
      expect(r.status, JSON.stringify(r.body)).toBe(202)
      made[s.id] = r.body.id
    }
    const at = new Date(Math.floor(Date.now() / 1000) * 1000 - 2000)
    await withDatabase(node, async (db) => {
      await db.query("UPDATE tasks SET idempotency_key = $2 WHERE id = $1", [made[pending.id], tickKey(pending.id, at)])
      await db.query("UPDATE tasks SET idempotency_key = $2 WHERE id = $1", [made[keyed.id], tickKey(keyed.id, at)])
      await db.query(
        "UPDATE schedule_ticks SET scheduled_for = $2, kind = 'scheduled', status = 'pending', task_id = NULL " +
          "WHERE schedule_id = $1",
        [pending.id, at]
      )
      await db.query("DELETE FROM schedule_ticks WHERE schedule_id = $1", [keyed.id])
      // all five due at T, in one statement: one claim takes them together
      await db.query(
        "UPDATE schedules SET next_tick = $2, next_run_at = $2 WHERE id = ANY($1::uuid[])",
        [schedules.map((s) => s.id), at]
      )
    })

    const ticks = await until("every tick at T fired", () =>
      withDatabase(node!, async (db) => {
        const { rows } = await db.query<{ schedule_id: string; status: string; task_id: string | null }>(
          "SELECT schedule_id, status, task_id FROM schedule_ticks WHERE scheduled_for = $1",
          [at]
        )
        return rows.length === 5 && rows.every((r) => r.status === "fired") ? rows : undefined
      }))
    const tickOf = (id: string) => ticks.find((t) => t.schedule_id === id)!
    // claims made the keyed one's and the others' ticks, in bulk: one transaction (one `now()`) each, and at
    // most one per claimer (two claim at once; SKIP LOCKED may split the due rows between them)
    const claimedAt = await withDatabase(node, async (db) =>
      (await db.query<{ n: number }>(
        "SELECT count(DISTINCT created_at)::int AS n FROM schedule_ticks WHERE scheduled_for = $1 AND schedule_id <> $2",
        [at, pending.id]
      )).rows[0]!.n)
    expect(claimedAt).toBeGreaterThanOrEqual(1)
    expect(claimedAt).toBeLessThanOrEqual(2)
    // the two that had their task keep it
    expect(tickOf(pending.id).task_id).toBe(made[pending.id])
    expect(tickOf(keyed.id).task_id).toBe(made[keyed.id])
    await withDatabase(node, async (db) => {
      for (const s of schedules) {
        const { rows } = await db.query<{ id: string; schedule_id: string }>(
          "SELECT id, schedule_id FROM tasks WHERE idempotency_key = $1",
          [tickKey(s.id, at)]
        )
        // one task per tick: the key's, and the tick's
        expect(rows).toEqual([{ id: tickOf(s.id).task_id, schedule_id: s.id }])
      }
      const { rows: [{ n }] } = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM tasks WHERE schedule_id = ANY($1::uuid[])",
        [schedules.map((s) => s.id)]
      )
      // the three new tasks and the two made before, nothing more
      expect(n).toBe(5)
    })
    // the new tasks run to their end (committed pending, then handed to their Task entity)
    for (const s of others) {
      const task = await until(`the run of ${s.id}`, async () => {
        const r = await call(node!, org.api_key, "GET", `/v1/tasks/${tickOf(s.id).task_id}`)
        return r.body?.status === "completed" ? r.body : undefined
      })
      expect(task).toMatchObject({ source: "schedule", schedule_id: s.id })
    }
  }, 60_000)
})
