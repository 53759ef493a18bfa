import * as Crypto from "node:crypto"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { eventually } from "../support/Poll.js"
import { startEventLog, useEventLog } from "./support.js"

// The event triggers as migrations 0021 and 0029 write them: ids from a transaction-local counter, per row

let log: Awaited<ReturnType<typeof startEventLog>>
let pool: pg.Pool
useEventLog((fixture) => {
  ;({ log, pool } = fixture)
})

const insertTask = (client: pg.ClientBase, organizationId: string, status: string) => {
  const id = Crypto.randomUUID()
  return client.query(
    `INSERT INTO tasks (id, organization_id, agent_id, status, source, user_id, user_email, input, result, finished_at)
     VALUES ($1, $2, $3, $4, 'api', 'u', 'u@example.com', 'hi',
       CASE WHEN $4 = 'completed' THEN 'ok' END, CASE WHEN $4 = 'completed' THEN now() END)`,
    [id, organizationId, Crypto.randomUUID(), status]
  ).then(() => id)
}

const eventsOf = async (organizationId: string) =>
  (await pool.query<{ id: string; type: string; task_id: string }>(
    "SELECT id::text, type, task_id FROM events WHERE organization_id = $1 ORDER BY id",
    [organizationId]
  )).rows.map((r) => ({ id: BigInt(r.id), type: r.type, task: r.task_id }))

const inTransaction = async <A>(f: (client: pg.ClientBase) => Promise<A>) => {
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const result = await f(client)
    await client.query("COMMIT")
    return result
  } finally {
    client.release()
  }
}

describe("event writes", () => {
  it("a task's end sorts after every other event of its transaction, the others in the order written", async () => {
    const organizationId = Crypto.randomUUID()
    const [a, b, c] = await inTransaction(async (client) => {
      const a = await insertTask(client, organizationId, "executing")
      await client.query("UPDATE tasks SET status = 'completed', result = 'ok', finished_at = now() WHERE id = $1", [a])
      // written after a's end, sorted before it
      const b = await insertTask(client, organizationId, "pending")
      const c = await insertTask(client, organizationId, "completed")
      return [a, b, c]
    })
    const events = await eventsOf(organizationId)
    expect(events.map((e) => [e.type, e.task])).toEqual([
      ["task.created", a],
      ["task.started", a],
      ["task.created", b],
      ["task.created", c],
      ["task.completed", a],
      ["task.completed", c]
    ])
    // one transaction: one xid, places 1.. in the lower half, ends from 2^19 + 1
    const xid = events[0]!.id >> 20n
    expect(events.every((e) => e.id >> 20n === xid)).toBe(true)
    expect(events.map((e) => e.id & 0xfffffn)).toEqual([1n, 2n, 3n, 4n, 524289n, 524290n])
  })

  it("a rolled-back savepoint takes its events back, and their places with them", async () => {
    const organizationId = Crypto.randomUUID()
    const [a, c] = await inTransaction(async (client) => {
      const a = await insertTask(client, organizationId, "pending")
      await client.query("SAVEPOINT s")
      await insertTask(client, organizationId, "completed")
      await client.query("ROLLBACK TO SAVEPOINT s")
      const c = await insertTask(client, organizationId, "completed")
      return [a, c]
    })
    const events = await eventsOf(organizationId)
    expect(events.map((e) => [e.type, e.task, e.id & 0xfffffn])).toEqual([
      ["task.created", a, 1n],
      ["task.created", c, 2n],
      ["task.completed", c, 524289n]
    ])
  })

  it("a change that is not an event writes none and leaves the counter alone", async () => {
    const organizationId = Crypto.randomUUID()
    const setting = await inTransaction(async (client) => {
      const a = await insertTask(client, organizationId, "pending")
      await client.query("SELECT set_config('switchyard.event_n', '', true)")
      // not a status change: no event
      await client.query("UPDATE tasks SET input = 'changed' WHERE id = $1", [a])
      const { rows: [row] } = await client.query<{ n: string | null }>(
        "SELECT current_setting('switchyard.event_n', true) AS n"
      )
      return row!.n
    })
    expect(setting).toBe("")
    expect((await eventsOf(organizationId)).map((e) => e.type)).toEqual(["task.created"])
  })
  it("notifies each followed organization of a transaction once, on commit, and no other", async () => {
    const [followed, unfollowed] = [Crypto.randomUUID(), Crypto.randomUUID()]
    await pool.query("INSERT INTO event_listeners (organization_id, until) VALUES ($1, now() + interval '1 minute')", [
      followed
    ])
    const listener = new pg.Client({ connectionString: log.databaseUrl })
    await listener.connect()
    const heard: Array<string> = []
    listener.on("notification", (n) => heard.push(n.payload ?? ""))
    await listener.query("LISTEN switchyard_events")
    try {
      await inTransaction(async (client) => {
        // the unfollowed organization's first: looked up, not notified; then the followed one's
        await insertTask(client, unfollowed, "pending")
        const a = await insertTask(client, followed, "executing")
        await client.query("UPDATE tasks SET status = 'completed', result = 'ok', finished_at = now() WHERE id = $1", [
          a
        ])
        await insertTask(client, unfollowed, "completed")
        expect(heard).toEqual([])
      })
      await eventually(() => heard.length > 0 ? true : undefined, 2000, "a notification", 20)
      // and no second one after it
      await new Promise((r) => setTimeout(r, 100))
      expect(heard).toEqual([followed])
    } finally {
      await listener.end()
    }
  })
})
