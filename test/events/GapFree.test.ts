import { Effect, Fiber, Stream } from "effect"
import * as Crypto from "node:crypto"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { OrganizationId } from "../../schema/Ids.js"
import { EventLog } from "../../src/events/EventLog.js"
import { eventually } from "../webhooks/support.js"
import { insertTasks, startEventLog } from "./support.js"

let log: Awaited<ReturnType<typeof startEventLog>>
let pool: pg.Pool
beforeAll(async () => {
  log = await startEventLog()
  pool = new pg.Pool({ connectionString: log.databaseUrl, max: 24 })
})
afterAll(async () => {
  await pool?.end()
  await log?.runtime.dispose()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Seen {
  readonly id: bigint
  readonly taskId: string
}

/** A transaction that writes `count` events, waits `holdMs` before its end, then commits or rolls back. */
const transaction = async (
  organizationId: string,
  count: number,
  holdMs: number,
  commit: boolean,
  written?: () => void
) => {
  const client = await pool.connect()
  try {
    await client.query("BEGIN")
    const ids = await insertTasks(client, organizationId, count)
    written?.()
    if (holdMs > 0) await client.query("SELECT pg_sleep($1)", [holdMs / 1000])
    await client.query(commit ? "COMMIT" : "ROLLBACK")
    return ids
  } finally {
    client.release()
  }
}

/**
 * A reader that follows from `after`, adding what it gets to `seen` as it comes, and drops the connection
 * after `take` events (or when `stop` says so), as a client disconnecting.
 */
const followFor = (organizationId: string, after: bigint, take: number, seen: Array<Seen>, stop: () => boolean) =>
  log.runtime.runPromise(
    Effect.flatMap(EventLog, (events) =>
      events.follow(organizationId as OrganizationId, after, () => true).pipe(
        Stream.take(take),
        Stream.tap((e) => Effect.sync(() => seen.push({ id: e.id, taskId: e.taskId! }))),
        Stream.interruptWhen(Effect.gen(function*() {
          while (!stop()) yield* Effect.sleep("20 millis")
        })),
        Stream.runDrain
      ))
  )

describe("event ids are gap-free", () => {
  it("readers that reconnect at random see exactly the committed events, in order, once, even when a lower id commits after a higher one", async () => {
    const organizationId = Crypto.randomUUID()
    const committed = new Set<string>()
    const rolledBack = new Set<string>()
    let writing = true
    const lateIds: Array<[Array<string>, Array<string>]> = []

    // readers: follow, drop the connection after a random number of events, resume with the last id seen
    const reader = async () => {
      const seen: Array<Seen> = []
      let reconnects = 0
      const done = () => !writing && seen.length >= committed.size
      for (;;) {
        const last = seen.at(-1)?.id ?? 0n
        await followFor(organizationId, last, 1 + Math.floor(Math.random() * 40), seen, done)
        reconnects++
        if (done()) return { seen, reconnects }
        await sleep(Math.random() * 30)
      }
    }
    // and readers that page with `read` (as webhook delivery does), restarting from what they kept
    const pager = async () => {
      const seen: Array<Seen> = []
      let position = 0n
      let restarts = 0
      while (writing || seen.length < committed.size) {
        const page = await log.runtime.runPromise(
          Effect.flatMap(EventLog, (events) => events.read(organizationId as OrganizationId, position, { limit: 7 }))
        )
        seen.push(...page.events.map((e) => ({ id: e.id, taskId: e.taskId! })))
        // a restart resumes from the last event kept, not from how far the read went
        if (Math.random() < 0.2) {
          position = seen.at(-1)?.id ?? 0n
          restarts++
        } else {
          position = page.next
        }
        if (!page.full) await sleep(Math.random() * 15)
      }
      return { seen, reconnects: restarts + 2 }
    }
    const readers = [...Array.from({ length: 4 }, reader), pager(), pager()]

    // a transaction that takes its id first and commits last, while others take higher ids and commit
    const late = async () => {
      let written = () => {}
      const wrote = new Promise<void>((resolve) => (written = resolve))
      const slow = transaction(organizationId, 2, 400, true, written)
      // its ids are taken: the next transactions take higher ones, and commit first
      await wrote
      const fast = (await Promise.all(Array.from({ length: 5 }, () => transaction(organizationId, 1, 0, true)))).flat()
      fast.forEach((id) => committed.add(id))
      const held = await slow
      held.forEach((id) => committed.add(id))
      lateIds.push([held, fast])
    }
    const writer = async (n: number) => {
      for (let i = 0; i < 15; i++) {
        const commit = Math.random() > 0.2
        const ids = await transaction(organizationId, 1 + (i % 3), Math.random() < 0.3 ? Math.random() * 80 : 0, commit)
        ids.forEach((id) => (commit ? committed : rolledBack).add(id))
        if (n % 2 === 0) await sleep(Math.random() * 10)
      }
    }
    await Promise.all([late(), late(), ...Array.from({ length: 10 }, (_, n) => writer(n))])
    writing = false

    // the slow transactions' events have lower ids than those committed before them
    const { rows } = await pool.query<{ id: string; task_id: string }>(
      // ordered by the number (the text of ids of 9 and 10 digits sorts otherwise)
      "SELECT id::text, task_id FROM events WHERE organization_id = $1 ORDER BY events.id",
      [organizationId]
    )
    expect(new Set(rows.map((r) => r.task_id))).toEqual(committed)
    const idOf = new Map(rows.map((r) => [r.task_id, BigInt(r.id)]))
    for (const [held, fast] of lateIds) {
      for (const h of held) for (const f of fast) expect(idOf.get(h)! < idOf.get(f)!).toBe(true)
    }

    const results = await Promise.race([
      Promise.all(readers),
      sleep(45_000).then(() => {
        throw new Error("readers did not catch up")
      })
    ])
    const expected = rows.map((r) => r.task_id)
    for (const { seen, reconnects } of results) {
      expect(reconnects).toBeGreaterThan(1)
      // in order, none twice
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.id > seen[i - 1]!.id).toBe(true)
      expect(seen.map((s) => s.taskId)).toEqual(expected)
      expect(seen.some((s) => rolledBack.has(s.taskId))).toBe(false)
    }
  })

  it("a read never passes a transaction still running: its events come later, in their place", async () => {
    const organizationId = Crypto.randomUUID() as OrganizationId
    const client = await pool.connect()
    try {
      await client.query("BEGIN")
      const [held] = await insertTasks(client, organizationId, 1)
      const [after] = await insertTasks(pool, organizationId, 1)
      const read = (from: bigint) =>
        log.runtime.runPromise(Effect.flatMap(EventLog, (events) => events.read(organizationId, from)))
      const first = await read(0n)
      // committed, but behind a transaction with a lower id: not readable yet, and said to be pending
      expect(first.events).toEqual([])
      expect(first.pending).toBe(true)
      await client.query("COMMIT")
      // a transaction of another test file (one PostgreSQL serves them all) that is still running below
      // these two holds them back too: read on from where the last read stopped until both came
      const later: Array<string | null> = []
      let from = first.next
      await eventually(async () => {
        const page = await read(from)
        later.push(...page.events.map((e) => e.taskId))
        from = page.next
        return later.length >= 2 ? later : undefined
      }, 5_000).catch(() => undefined)
      expect(later).toEqual([held, after])
    } finally {
      client.release()
    }
  })

  it("a follower woken by a commit gets its events within the notification's round trip", async () => {
    const organizationId = Crypto.randomUUID()
    const follower = log.runtime.runFork(
      Effect.flatMap(
        EventLog,
        (events) =>
          events.follow(organizationId as OrganizationId, 0n, () => true).pipe(Stream.take(3), Stream.runCollect)
      )
    )
    await sleep(100)
    const ids = await insertTasks(pool, organizationId, 3)
    const got = await log.runtime.runPromise(Fiber.join(follower).pipe(Effect.timeout("1500 millis")))
    expect(Array.from(got, (e) => e.taskId)).toEqual(ids)
  })
})

describe("wake-ups", () => {
  it("commits notify only for organizations a node follows: a commit nobody follows takes no notification lock", async () => {
    const followed = Crypto.randomUUID()
    const unfollowed = Crypto.randomUUID()
    const listener = new pg.Client({ connectionString: log.databaseUrl })
    await listener.connect()
    const heard: Array<string> = []
    listener.on("notification", (n) => heard.push(n.payload ?? ""))
    await listener.query("LISTEN switchyard_events")
    const follower = log.runtime.runFork(
      Effect.flatMap(
        EventLog,
        (events) => events.follow(followed as OrganizationId, 0n, () => true).pipe(Stream.take(1), Stream.runCollect)
      )
    )
    try {
      // the follower's node registers the organization (event_listeners) before it relies on notifications
      const deadline = Date.now() + 5000
      while (Date.now() < deadline) {
        const { rows } = await pool.query("SELECT 1 FROM event_listeners WHERE organization_id = $1", [followed])
        if (rows.length > 0) break
        await sleep(20)
      }
      await insertTasks(pool, unfollowed, 1)
      await insertTasks(pool, followed, 1)
      await log.runtime.runPromise(Fiber.join(follower).pipe(Effect.timeout("3 seconds")))
      await sleep(100)
      expect(heard).toContain(followed)
      expect(heard).not.toContain(unfollowed)
    } finally {
      await listener.end()
    }
  })
})
