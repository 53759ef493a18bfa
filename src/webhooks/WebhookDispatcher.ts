import { Duration, Effect, Either, Fiber, Runtime, Schedule, Stream } from "effect"
import type { OrganizationId } from "../../schema/Ids.js"
import type { WebhookId } from "../../schema/Webhooks.js"
import { EventLog } from "../events/EventLog.js"
import type { EventRecord } from "../events/EventRepo.js"
import { DeliveryRepo, type Endpoint, type Follower, type HeldDelivery } from "./DeliveryRepo.js"
import { DeliverySender } from "./DeliverySender.js"

/** Events read per fan-out statement. */
const PAGE = 500
/** How often every endpoint is looked at without a notification (a lost one, another node's change). */
const SWEEP_EVERY_MS = 2000

interface Pump {
  busy: boolean
  again: boolean
  timer: ReturnType<typeof setTimeout> | undefined
  backoff: number
  last: number
}

/** The event's body as delivered: the event (schema/Events.ts) with the organization's id. */
const bodyOf = (e: EventRecord, organizationId: string) => {
  const event = JSON.parse(e.json)
  return JSON.stringify({
    id: event.id,
    type: event.type,
    at: event.at,
    organization_id: organizationId,
    data: event.data
  })
}

/**
 * Turns the event log into webhook deliveries, on every node (docs/guides/webhooks.md). Woken by the log's
 * changes of the organizations with enabled endpoints (`EventLog.changes`: each commit, and its safety net) and
 * by a sweep every 2 s, a node reads each endpoint's events after its position and, in one statement, moves the
 * position and inserts their deliveries, leased to itself; DeliverySender sends them. Whichever node moves the
 * position first makes the deliveries; the others read again from where it moved it.
 */
export class WebhookDispatcher extends Effect.Service<WebhookDispatcher>()("webhooks/WebhookDispatcher", {
  scoped: Effect.gen(function*() {
    const repo = yield* DeliveryRepo
    const sender = yield* DeliverySender
    const log = yield* EventLog
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    const scope = yield* Effect.scope
    const followers = new Map<string, Map<WebhookId, Follower & { position: string }>>()
    const watching = new Map<string, Fiber.RuntimeFiber<void>>()
    const pumps = new Map<string, Pump>()

    /** A disabled or deleted endpoint: nothing more read for it here, nothing more sent. */
    const forget = (webhookId: WebhookId) => {
      sender.forget(webhookId)
      for (const set of followers.values()) set.delete(webhookId)
    }

    /** One endpoint's fan-out, page by page; true when events wait behind a transaction still running. */
    const fanOut = (f: Follower & { position: string }): Effect.Effect<boolean> =>
      Effect.gen(function*() {
        for (;;) {
          const types = f.event_types.length === 0 ? undefined : f.event_types
          const read = yield* Effect.either(
            log.read(f.organization_id, BigInt(f.position), { limit: PAGE, ...(types ? { types } : {}) })
          )
          let to: string
          let events: Array<{ id: bigint; type: string; body: string }> = []
          let page: { full: boolean; pending: boolean } = { full: false, pending: false }
          if (Either.isLeft(read)) {
            // pruned past the endpoint (disabled longer than the retention window): on from the oldest kept
            to = String((read.left.details as { oldest_after: string }).oldest_after)
            yield* Effect.logWarning(`webhook ${f.id}: events after ${f.position} were pruned; going on after ${to}`)
          } else {
            page = read.right
            to = read.right.next.toString()
            if (to === f.position) return read.right.pending
            events = read.right.events.map((e) => ({ id: e.id, type: e.type, body: bodyOf(e, f.organization_id) }))
          }
          const hold = sender.lease()
          const moved = yield* repo.fanOut(f.id, f.position, to, events, hold)
          if (moved.moved === 0) {
            const now = yield* repo.positionOf(f.id)
            if (now === undefined) {
              forget(f.id)
              return false
            }
            f.position = now
            continue
          }
          f.position = to
          if (hold !== undefined) sender.enqueue(moved, moved.delivered)
          if (!page.full) return page.pending
        }
      })

    const pump = (organizationId: string): void => {
      const set = followers.get(organizationId)
      if (set === undefined || set.size === 0) return
      let p = pumps.get(organizationId)
      if (p === undefined) {
        p = { busy: false, again: false, timer: undefined, backoff: 2, last: 0 }
        pumps.set(organizationId, p)
      }
      const state = p
      if (state.busy) {
        state.again = true
        return
      }
      state.busy = true
      state.again = false
      state.last = Date.now()
      clearTimeout(state.timer)
      runFork(
        Effect.forEach([...set.values()], fanOut, { concurrency: 4 }).pipe(
          Effect.map((pending) => {
            state.busy = false
            if (state.again) return pump(organizationId)
            if (pending.some((x) => x)) {
              // a transaction that took a lower id still runs: no notification announces its end
              state.timer = setTimeout(() => pump(organizationId), state.backoff)
              state.backoff = Math.min(state.backoff * 2, 200)
            } else {
              state.backoff = 2
            }
          }),
          Effect.catchAllCause((cause) =>
            Effect.sync(() => {
              state.busy = false
              state.timer = setTimeout(() => pump(organizationId), 1000)
            }).pipe(Effect.zipRight(Effect.logWarning("webhook fan-out failed; trying again", cause)))
          )
        )
      )
    }

    /** The enabled endpoints, from the table: positions only move forward here. */
    const refresh = Effect.gen(function*() {
      const rows = yield* repo.followers
      const next = new Map<string, Map<WebhookId, Follower & { position: string }>>()
      for (const row of rows) {
        const known = followers.get(row.organization_id)?.get(row.id)
        const position = known !== undefined && BigInt(known.position) > BigInt(row.position)
          ? known.position
          : row.position
        const set = next.get(row.organization_id) ?? new Map()
        set.set(row.id, { ...row, position })
        next.set(row.organization_id, set)
      }
      followers.clear()
      for (const [k, v] of next) followers.set(k, v)
      sender.follow(new Map(rows.map((row) => [row.id, row.url])))
      for (const k of pumps.keys()) {
        if (!followers.has(k)) {
          clearTimeout(pumps.get(k)!.timer)
          pumps.delete(k)
        }
      }
      // follow the changes of the organizations with endpoints (their commits then notify), and only theirs
      for (const [organizationId, fiber] of watching) {
        if (!followers.has(organizationId)) {
          watching.delete(organizationId)
          yield* Fiber.interruptFork(fiber)
        }
      }
      for (const organizationId of followers.keys()) {
        if (watching.has(organizationId)) continue
        const fiber = yield* log.changes(organizationId as OrganizationId).pipe(
          Stream.runForEach(() => Effect.sync(() => pump(organizationId))),
          Effect.forkIn(scope)
        )
        watching.set(organizationId, fiber)
      }
    })

    const sweep = refresh.pipe(
      Effect.tap(() =>
        Effect.sync(() => {
          const now = Date.now()
          for (const organizationId of followers.keys()) {
            if (now - (pumps.get(organizationId)?.last ?? 0) >= SWEEP_EVERY_MS / 2) pump(organizationId)
          }
        })
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("webhook endpoints could not be read", cause))
    )
    yield* sweep
    yield* sweep.pipe(Effect.repeat(Schedule.spaced(Duration.millis(SWEEP_EVERY_MS))), Effect.forkScoped)

    /** After a change of an endpoint here: the endpoints read again, its organization's events looked at. */
    const changed = (organizationId: OrganizationId, webhookId: WebhookId, enabled: boolean) =>
      Effect.gen(function*() {
        if (!enabled) forget(webhookId)
        yield* refresh
        pump(organizationId)
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("webhook endpoints could not be read", cause)))

    /** Sends deliveries this node just took the lease of (a manual retry, a ping); waits for the attempt. */
    const sendNow = (delivery: HeldDelivery & Endpoint) =>
      Effect.suspend(() => {
        sender.enqueue(delivery, [delivery])
        return sender.attempted(delivery.id)
      })

    return { owner: sender.owner, leaseSeconds: sender.leaseSeconds, changed, sendNow } as const
  }),
  dependencies: [DeliveryRepo.Default, DeliverySender.Default]
}) {}
