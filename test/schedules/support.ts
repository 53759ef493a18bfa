import { expect } from "vitest"
import { call, withDatabase } from "../access/support.js"
import { eventually } from "../support/Poll.js"
import type { TestNode } from "../support/TestNode.js"

export const user = { id: "u-sched", email: "sched@example.com" }

/** A scripted agent whose every run answers `text` after `delayMs`. */
export const createScriptedAgent = async (node: TestNode, apiKey: string, delayMs = 0, text = "done") => {
  const r = await call(node, apiKey, "POST", "/v1/agents", {
    name: `scheduled ${Math.random().toString(36).slice(2, 8)}`,
    model: { provider: "scripted", script: [{ text, ...(delayMs > 0 ? { delay_ms: delayMs } : {}) }] }
  })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body.id as string
}

export const createSchedule = async (node: TestNode, apiKey: string, body: Record<string, unknown>) => {
  const r = await call(node, apiKey, "POST", "/v1/schedules", { name: "nightly", input: { text: "go", user }, ...body })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  return r.body
}

/** The schedule's runs as tasks (GET /v1/tasks?schedule_id=). */
export const runsOf = async (node: TestNode, apiKey: string, scheduleId: string) => {
  const r = await call(node, apiKey, "GET", `/v1/tasks?schedule_id=${scheduleId}&limit=200`)
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return r.body.items as Array<any>
}

/** The schedule's ticks as stored, oldest first. */
export const ticksOf = (node: TestNode, scheduleId: string) =>
  withDatabase(node, async (db) =>
    (await db.query(
      "SELECT scheduled_for, kind, status, task_id, reason FROM schedule_ticks WHERE schedule_id = $1 " +
        "ORDER BY scheduled_for",
      [scheduleId]
    )).rows as Array<{ scheduled_for: Date; kind: string; status: string; task_id: string | null; reason: string }>)

/** `eventually`, named first, polling every 100 ms (each poll reads the database). */
export const until = <A>(what: string, f: () => Promise<A | undefined>, timeoutMs = 20_000): Promise<A> =>
  eventually(f, timeoutMs, what, 100)
