import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import keysetMilliseconds from "../../src/db/migrations/0034_keyset_milliseconds.js"
import { startTestNode, type TestNode } from "../support/TestNode.js"
import { call, pageThrough, withDatabase } from "./support.js"

let node: TestNode
beforeAll(async () => {
  node = await startTestNode()
})
afterAll(() => node?.stop())

const user = { id: "u", email: "u@example.com" }

/** `n` tasks invoked at once: the node inserts those that arrive together in one statement, at one time. */
const manyTasks = async (n: number) => {
  const org = await node.bootstrap()
  const agent = (await call(node, org.api_key, "POST", "/v1/agents", {
    name: "many",
    model: { provider: "scripted", script: [{ text: "x" }] }
  })).body
  const invoked = await Promise.all(
    Array.from(
      { length: n },
      () =>
        call(node, org.api_key, "POST", `/v1/agents/${agent.id}/invoke?asynchronous=true`, {
          input: { text: "x", user }
        })
    )
  )
  return { org, ids: invoked.map((r) => r.body.id as string) }
}

describe("a newest-first list pages every row exactly once", () => {
  it("tasks inserted together (one statement, one time) are neither skipped nor repeated", async () => {
    const { org, ids } = await manyTasks(60)
    const shared = await withDatabase(node, async (db) =>
      (await db.query(
        "SELECT count(*)::int - count(DISTINCT created_at)::int AS n FROM tasks WHERE organization_id = $1",
        [org.organization_id]
      )).rows[0].n)
    // the case itself: some tasks share their time with another
    expect(shared).toBeGreaterThan(0)
    const paged = await pageThrough(node, org.api_key, "/v1/tasks", 3)
    expect(paged.ids.length).toBe(60)
    expect(new Set(paged.ids)).toEqual(new Set(ids))
  })

  it("rows written with microseconds before migration 34 page right once it has run", async () => {
    const { org, ids } = await manyTasks(12)
    await withDatabase(node, (db) =>
      db.query(
        "UPDATE tasks SET created_at = created_at + (random() * 900 + 1) * interval '1 microsecond' " +
          "WHERE organization_id = $1",
        [org.organization_id]
      ))
    await Effect.runPromise(
      keysetMilliseconds.pipe(Effect.provide(PgClient.layer({ url: Redacted.make(node.databaseUrl) })), Effect.scoped)
    )
    const paged = await pageThrough(node, org.api_key, "/v1/tasks", 2)
    expect(paged.ids.length).toBe(12)
    expect(new Set(paged.ids)).toEqual(new Set(ids))
    // its event triggers were off while it ran: cutting a time is no event
    const events = await withDatabase(node, async (db) =>
      (await db.query(
        "SELECT count(*)::int AS n FROM events WHERE organization_id = $1 AND type = 'task.created'",
        [org.organization_id]
      )).rows[0].n)
    expect(events).toBe(12)
  })
})
