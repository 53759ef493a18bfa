import { Duration, Effect, Either, Stream } from "effect"
import * as Crypto from "node:crypto"
import pg from "pg"
import { describe, expect, it } from "vitest"
import type { OrganizationId } from "../../schema/Ids.js"
import { EventLog } from "../../src/events/EventLog.js"
import { EventRepo } from "../../src/events/EventRepo.js"
import { insertTasks, startEventLog, useEventLog } from "./support.js"

let log: Awaited<ReturnType<typeof startEventLog>>
let pool: pg.Pool
useEventLog((fixture) => {
  ;({ log, pool } = fixture)
})

const run = <A, E>(effect: Effect.Effect<A, E, EventLog | EventRepo>) =>
  log.runtime.runPromise(Effect.provide(effect, EventRepo.Default))

describe("event retention", () => {
  it("prunes events past the window, and a reader resuming before them is told, never sent a gap", async () => {
    const organizationId = Crypto.randomUUID() as OrganizationId
    const other = Crypto.randomUUID() as OrganizationId
    for (const n of [1, 1, 1]) await insertTasks(pool, organizationId, n)
    await insertTasks(pool, other, 1)
    const ids = (await pool.query<{ id: string }>(
      "SELECT id::text FROM events WHERE organization_id = $1 ORDER BY events.id",
      [organizationId]
    )).rows.map((r) => BigInt(r.id))
    expect(ids).toHaveLength(3)
    // the first two are eight days old
    await pool.query("UPDATE events SET at = now() - interval '8 days' WHERE organization_id = $1 AND id <= $2", [
      organizationId,
      ids[1]!.toString()
    ])
    const pruned = await run(Effect.flatMap(EventRepo, (repo) => repo.prune(Duration.days(7))))
    expect(pruned).toBe(2)

    const read = (after: bigint) =>
      run(Effect.either(Effect.flatMap(EventLog, (events) => events.read(organizationId, after))))
    // from the oldest kept; readers see only what is below every open transaction of the database server, and
    // other tests hold some open for a while: wait for it to be readable (then it stays so)
    const deadline = Date.now() + 60_000
    let fromStart = await read(0n)
    while (Either.isRight(fromStart) && fromStart.right.events.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
      fromStart = await read(0n)
    }
    expect(Either.getOrThrow(fromStart).events.map((e) => e.id)).toEqual([ids[2]])
    // from the last pruned one: nothing was lost after it
    expect(Either.getOrThrow(await read(ids[1]!)).events.map((e) => e.id)).toEqual([ids[2]])
    // from before it: the event after it is gone
    const expired = await read(ids[0]!)
    expect(Either.isLeft(expired) && expired.left.code).toBe("events_expired")
    const followed = await run(
      Effect.either(
        Effect.flatMap(
          EventLog,
          (events) => events.follow(organizationId, ids[0]!, () => true).pipe(Stream.take(1), Stream.runCollect)
        )
      )
    )
    expect(Either.isLeft(followed) && followed.left.code).toBe("events_expired")
    // another organization's events and horizon are its own
    const theirs = await run(Effect.flatMap(EventLog, (events) => events.read(other, 1n)))
    expect(theirs.events).toHaveLength(1)
  })
})
