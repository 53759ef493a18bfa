import { Effect } from "effect"
import * as Crypto from "node:crypto"
import type { Readable } from "node:stream"
import pg from "pg"
import { describe, expect, it } from "vitest"
import type { Gone } from "../../schema/Errors.js"
import type { OrganizationId } from "../../schema/Ids.js"
import { EventLog } from "../../src/events/EventLog.js"
import type { EventRecord } from "../../src/events/EventRepo.js"
import { followResponse } from "../../src/events/EventStreamResponse.js"
import type { Subscribe } from "../../src/events/EventTails.js"
import { Drain } from "../../src/http/Drain.js"
import { eventually } from "../support/Poll.js"
import { insertTasks, startEventLog, useEventLog } from "./support.js"

let log: Awaited<ReturnType<typeof startEventLog>>
let pool: pg.Pool
useEventLog((fixture) => {
  ;({ log, pool } = fixture)
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const until = (what: string, done: () => boolean, ms = 60_000) => eventually(() => done() || undefined, ms, what, 20)

/** A pushed subscription (what the SSE responses write from) whose sink takes what it is given. */
const subscriber = async (organizationId: string, after: bigint, wantsMore: () => boolean) => {
  const events = await log.runtime.runPromise(EventLog)
  const seen: Array<EventRecord> = []
  const ended: Array<Gone | undefined> = []
  const subscription = events.subscribe(organizationId as OrganizationId, after, () => true)({
    events: (es) => {
      seen.push(...es)
      return wantsMore()
    },
    end: (error) => void ended.push(error)
  })
  return { seen, ended, subscription }
}

const inOrderOnce = (seen: ReadonlyArray<EventRecord>) => seen.every((e, i) => i === 0 || e.id > seen[i - 1]!.id)

/** The text a pushed response's body has written so far, and whether it has ended. */
const reading = (response: ReturnType<typeof followResponse>) => {
  if (response.body._tag !== "Raw") throw new Error("not a raw body")
  const body = response.body.body as Readable
  const read = { text: "", ended: false }
  body.setEncoding("utf8")
  body.on("data", (chunk: string) => void (read.text += chunk))
  body.on("end", () => void (read.ended = true))
  return read
}

describe("pushed event subscriptions (the SSE responses' source)", () => {
  it(
    "a reader that takes nothing is detached from its tail, not buffered without bound, and later reads every event once, in order",
    async () => {
      const organizationId = Crypto.randomUUID()
      const start = await log.runtime.runPromise(
        Effect.flatMap(EventLog, (l) => l.position(organizationId as OrganizationId))
      )
      const fast = await subscriber(organizationId, start, () => true)
      // the slow one asks once, then never again: as a client whose socket is full
      const slow = await subscriber(organizationId, start, () => false)
      fast.subscription.request()
      slow.subscription.request()
      await sleep(300)
      // more than a tail buffers for one follower (BUFFER_MAX, 5,000)
      await insertTasks(pool, organizationId, 6000)
      await until("the fast reader's 6,000 events", () => fast.seen.length >= 6000)
      const held = slow.subscription.buffered()
      expect(slow.seen.length).toBeLessThanOrEqual(500)
      expect(held).toBeLessThanOrEqual(5500)
      // detached: what commits next is not held for it
      await insertTasks(pool, organizationId, 1000)
      await until("the fast reader's 7,000 events", () => fast.seen.length >= 7000)
      expect(slow.subscription.buffered()).toBe(held)
      // it reads again: on its own up to the present, then from the tail; each event once, in order
      slow.subscription.request()
      const takeAll = () => {
        // the sink said "no more" after each push: ask again until it has all
        slow.subscription.request()
        return slow.seen.length >= 7000
      }
      await until("the slow reader's 7,000 events", takeAll)
      await insertTasks(pool, organizationId, 10)
      await until("the slow reader's next 10 events, from the tail", () => {
        slow.subscription.request()
        return slow.seen.length >= 7010
      })
      await until("the fast reader's 7,010 events", () => fast.seen.length >= 7010)
      for (const r of [fast, slow]) {
        expect(r.seen.length).toBe(7010)
        expect(inOrderOnce(r.seen)).toBe(true)
        expect(r.ended).toEqual([])
      }
      expect(slow.seen.map((e) => e.id)).toEqual(fast.seen.map((e) => e.id))
      fast.subscription.close()
      slow.subscription.close()
    },
    120_000
  )

  it("a tail's followers past one hand-out slice each get every event once, in order, while commits go on", async () => {
    const organizationId = Crypto.randomUUID()
    const start = await log.runtime.runPromise(
      Effect.flatMap(EventLog, (l) => l.position(organizationId as OrganizationId))
    )
    // nearly nineteen slices of the tail's hand-out (WAKE_SLICE, 16)
    const readers = await Promise.all(Array.from({ length: 300 }, () => subscriber(organizationId, start, () => true)))
    for (const r of readers) r.subscription.request()
    await sleep(300)
    // commits keep coming while the hand-outs of earlier reads are spread over turns of the event loop
    for (let batch = 0; batch < 20; batch++) await insertTasks(pool, organizationId, 5)
    await until("every reader's 100 events", () => readers.every((r) => r.seen.length >= 100))
    await sleep(100)
    const reference = readers[0]!.seen.map((e) => e.id)
    expect(reference).toHaveLength(100)
    expect(inOrderOnce(readers[0]!.seen)).toBe(true)
    for (const r of readers) {
      expect(r.seen.map((e) => e.id)).toEqual(reference)
      expect(r.ended).toEqual([])
      r.subscription.close()
    }
  })

  it("a closed subscription is pushed nothing more", async () => {
    const organizationId = Crypto.randomUUID()
    const start = await log.runtime.runPromise(
      Effect.flatMap(EventLog, (l) => l.position(organizationId as OrganizationId))
    )
    const reader = await subscriber(organizationId, start, () => true)
    reader.subscription.request()
    await insertTasks(pool, organizationId, 3)
    await until("3 events", () => reader.seen.length >= 3)
    reader.subscription.close()
    await insertTasks(pool, organizationId, 3)
    await sleep(500)
    expect(reader.seen.length).toBe(3)
    expect(reader.ended).toEqual([])
  })

  it("the pushed response writes retry:, then each event framed, and ends at a drain", async () => {
    const organizationId = Crypto.randomUUID()
    const drain = await Effect.runPromise(Effect.provide(Drain, Drain.Default))
    const events = await log.runtime.runPromise(EventLog)
    const start = await log.runtime.runPromise(events.position(organizationId as OrganizationId))
    const response = followResponse(drain, events.subscribe(organizationId as OrganizationId, start, () => true))
    expect(response.headers["content-type"] ?? response.body.contentType).toContain("text/event-stream")
    const read = reading(response)
    await sleep(300)
    const ids = await insertTasks(pool, organizationId, 2)
    await until("two events", () => (read.text.match(/^id: /gm) ?? []).length === 2)
    expect(read.text.startsWith("retry: 2000\n\n")).toBe(true)
    const frames = read.text.split("\n\n").filter((f) => f.startsWith("id: "))
    expect(frames.map((f) => f.split("\n")[1])).toEqual(["event: task.created", "event: task.created"])
    expect(ids.every((id) => read.text.includes(id))).toBe(true)
    await Effect.runPromise(drain.begin)
    await until("the end at the drain", () => read.ended, 5000)
    // a response made while draining ends at once, after its retry:
    const late = followResponse(drain, events.subscribe(organizationId as OrganizationId, start, () => true))
    if (late.body._tag !== "Raw") throw new Error("not a raw body")
    const lateBody = late.body.body as Readable
    let lateText = ""
    lateBody.setEncoding("utf8")
    lateBody.on("data", (chunk: string) => void (lateText += chunk))
    await new Promise((resolve) => lateBody.once("end", resolve))
    expect(lateText).toBe("retry: 2000\n\n")
  })

  it("a stream whose filter matched nothing ends at a drain with an id: where it is, so its client resumes from there", async () => {
    // a quiet filtered stream (types=task.error) whose client reconnected with its last event's id read again from
    // there, a 410 once that event was pruned; having seen no event, it reconnected without one and missed what
    // committed meanwhile. An `id:` without `data:` moves EventSource's last event id and dispatches nothing
    const organizationId = Crypto.randomUUID()
    const drain = await Effect.runPromise(Effect.provide(Drain, Drain.Default))
    const events = await log.runtime.runPromise(EventLog)
    const start = await log.runtime.runPromise(events.position(organizationId as OrganizationId))
    let subscription: ReturnType<Subscribe> | undefined
    const subscribe: Subscribe = (sink) =>
      subscription = events.subscribe(organizationId as OrganizationId, start, (e) => e.type === "task.error")(sink)
    const read = reading(followResponse(drain, subscribe))
    await insertTasks(pool, organizationId, 3)
    const { rows: [{ last }] } = await pool.query<{ last: string }>(
      "SELECT max(id)::text AS last FROM events WHERE organization_id = $1",
      [organizationId]
    )
    await until("the stream past the events it does not take", () => (subscription?.position() ?? 0n) >= BigInt(last))
    await Effect.runPromise(drain.begin)
    await until("the end at the drain", () => read.ended, 5000)
    expect(read.text.startsWith("retry: 2000\n\n")).toBe(true)
    expect(read.text).not.toContain("data:")
    const at = /\nid: (\d+)\n\n$/.exec(`\n${read.text}`)?.[1]
    expect(at).toBeDefined()
    expect(BigInt(at!)).toBeGreaterThanOrEqual(BigInt(last))
    // a position the log takes back (not ahead, not pruned), after the events the stream passed
    const resumed = await log.runtime.runPromise(events.read(organizationId as OrganizationId, BigInt(at!)))
    expect(resumed.events).toEqual([])
    expect(BigInt(at!)).toBeLessThan(resumed.below)
  })
})
