import { Duration, Effect, Either, Fiber, Runtime, Schedule, Stream } from "effect"
import * as Crypto from "node:crypto"
import * as Os from "node:os"
import type { OrganizationId } from "../../schema/Ids.js"
import type { DeliveryId, WebhookId } from "../../schema/Webhooks.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { Egress } from "../connectors/Egress.js"
import { EventLog } from "../events/EventLog.js"
import type { EventRecord } from "../events/EventRepo.js"
import { WebhookDisabler } from "./WebhookDisabler.js"
import { type AttemptResult, type Endpoint, type Follower, type HeldDelivery, WebhookRepo } from "./WebhookRepo.js"
import { send } from "./WebhookSender.js"
import { secretKey } from "./WebhookSignature.js"

/** Events read per fan-out statement. */
const PAGE = 500
/** Deliveries a node holds (queued or in flight) at most; past it, new ones wait in the table for any node. */
const HELD_MAX = 5000
/** Deliveries claimed per statement. */
const CLAIM_BATCH = 200
/** How often every endpoint is looked at without a notification (a lost one, another node's change). */
const SWEEP_EVERY_MS = 2000
/** How often finished deliveries past the event retention are deleted (jittered), by any node. */
const PRUNE_EVERY_MS = 5 * 60_000

/** The context a webhook's secret is sealed under: a ciphertext copied to another row does not open. */
export const secretContext = (organizationId: string, webhookId: string) => ["webhook", organizationId, webhookId]

interface Queued extends HeldDelivery {
  readonly webhookId: WebhookId
  readonly url: string
  readonly keys: ReadonlyArray<Buffer>
}

interface Queue {
  readonly items: Array<Queued>
  inFlight: number
}

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
 * Delivers the event log to webhook endpoints, on every node (docs/guides/webhooks.md):
 *   - fan-out: woken by the log's changes of the organizations with endpoints (`EventLog.changes`: each commit,
 *     and its safety net), and a sweep every 2 s, a node reads each enabled endpoint's
 *     events after its position and, in one statement, moves the position and inserts their deliveries, leased
 *     to itself; whichever node moves the position first makes the deliveries, the others read again.
 *   - sending: per endpoint, in event order, up to SWITCHYARD_WEBHOOK_CONCURRENCY at a time; results are
 *     recorded in batches (one statement for all the attempts that ended meanwhile). A failure is retried on
 *     the schedule (SWITCHYARD_WEBHOOK_BACKOFF, ±10% jitter) by whichever node claims it when due.
 *   - leases: a node renews the leases of what it holds; a killed node's deliveries come back to all nodes when
 *     their leases run out (the request timeout and 10 s), and are sent again under the same `webhook-id`.
 */
export class WebhookDispatcher extends Effect.Service<WebhookDispatcher>()("webhooks/WebhookDispatcher", {
  scoped: Effect.gen(function*() {
    const repo = yield* WebhookRepo
    const log = yield* EventLog
    const egress = yield* Egress
    const vault = yield* CredentialVault
    const disabler = yield* WebhookDisabler
    const config = yield* SwitchyardConfig
    const { backoff, concurrency } = config.webhooks
    const timeoutMs = Duration.toMillis(config.webhooks.timeout)
    const leaseSeconds = Math.ceil(timeoutMs / 1000) + 10
    const pollMs = Math.min(1000, Math.max(50, backoff[0]! / 2))
    const owner = `${Os.hostname()}/${process.pid}/${Crypto.randomBytes(4).toString("hex")}`
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())

    const scope = yield* Effect.scope
    const followers = new Map<string, Map<WebhookId, Follower & { position: string }>>()
    const watching = new Map<string, Fiber.RuntimeFiber<void>>()
    const pumps = new Map<string, Pump>()
    const queues = new Map<WebhookId, Queue>()
    const held = new Set<string>()
    const results: Array<AttemptResult> = []
    const waiters = new Map<string, Array<() => void>>()
    let flushing = false

    const keysOf = (endpoint: Endpoint): ReadonlyArray<Buffer> => {
      const context = secretContext(endpoint.organization_id, endpoint.webhook_id)
      const keys = [secretKey(vault.open<string>(endpoint.secret, endpoint.secret_key_version, context))]
      if (endpoint.previous_secret !== null && endpoint.previous_secret_key_version !== null) {
        keys.push(
          secretKey(vault.open<string>(endpoint.previous_secret, endpoint.previous_secret_key_version, context))
        )
      }
      return keys
    }

    const resultOf = (item: Queued, answer: Awaited<ReturnType<typeof send>>): AttemptResult => {
      const attempt = item.attempts + 1
      const now = Date.now()
      const ok = answer.status !== null && answer.status >= 200 && answer.status < 300
      const outcome = ok
        ? "succeeded"
        : answer.status === 410
        ? "gone"
        : attempt <= backoff.length
        ? "retry"
        : "exhausted"
      const delay = outcome === "retry" ? backoff[attempt - 1]! * (0.9 + Math.random() * 0.2) : 0
      return {
        id: item.id,
        webhook_id: item.webhookId,
        owner,
        attempt,
        outcome,
        status_code: answer.status,
        latency_ms: Math.round(answer.latencyMs * 100) / 100,
        excerpt: answer.excerpt,
        error: answer.error,
        at: new Date(now - answer.latencyMs).toISOString(),
        next_at: outcome === "retry" ? new Date(now + delay).toISOString() : null,
        last_scheduled: attempt === backoff.length + 1
      }
    }

    /** Group commit of the attempts that ended: one statement for every result since the last one. */
    const flush = (): void => {
      if (flushing || results.length === 0) return
      flushing = true
      const batch = results.splice(0)
      runFork(
        repo.record(batch).pipe(
          Effect.flatMap((doomed) =>
            Effect.forEach(
              doomed,
              (d) =>
                disabler.disable(d.webhook_id, d.outcome === "gone" ? "gone" : "failing", d.id).pipe(
                  Effect.tap(() => Effect.sync(() => forget(d.webhook_id)))
                )
            )
          ),
          Effect.catchAllCause((cause) => Effect.logWarning("webhook attempts could not be recorded", cause)),
          Effect.ensuring(Effect.sync(() => {
            for (const r of batch) {
              held.delete(r.id)
              for (const wake of waiters.get(r.id) ?? []) wake()
              waiters.delete(r.id)
            }
            flushing = false
            flush()
          }))
        )
      )
    }

    const drain = (webhookId: WebhookId, queue: Queue): void => {
      while (queue.inFlight < concurrency && queue.items.length > 0) {
        const item = queue.items.shift()!
        queue.inFlight++
        void send(egress.dispatcher, item, timeoutMs, egress.explain).then((answer) => {
          queue.inFlight--
          results.push(resultOf(item, answer))
          flush()
          drain(webhookId, queue)
          if (queue.inFlight === 0 && queue.items.length === 0 && queues.get(webhookId) === queue) {
            queues.delete(webhookId)
          }
        })
      }
    }

    /** Sends deliveries this node holds the lease of, after what is queued for the endpoint already. */
    const enqueue = (endpoint: Endpoint, deliveries: ReadonlyArray<HeldDelivery>): void => {
      if (deliveries.length === 0) return
      const keys = keysOf(endpoint)
      let queue = queues.get(endpoint.webhook_id)
      if (queue === undefined) {
        queue = { items: [], inFlight: 0 }
        queues.set(endpoint.webhook_id, queue)
      }
      for (const d of deliveries) {
        if (held.has(d.id)) continue
        held.add(d.id)
        queue.items.push({ ...d, webhookId: endpoint.webhook_id, url: endpoint.url, keys })
      }
      drain(endpoint.webhook_id, queue)
    }

    /** A disabled or deleted endpoint: what waits for it here is not sent (its leases run out). */
    const forget = (webhookId: WebhookId) => {
      const queue = queues.get(webhookId)
      if (queue !== undefined) {
        for (const item of queue.items.splice(0)) held.delete(item.id)
      }
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
          const hold = held.size < HELD_MAX ? { owner, leaseSeconds } : undefined
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
          if (hold !== undefined) enqueue(moved, moved.delivered)
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

    const claimOnce = Effect.suspend(() => {
      const room = Math.min(CLAIM_BATCH, HELD_MAX - held.size)
      if (room <= 0) return Effect.succeed(0)
      return Effect.map(repo.claim(owner, leaseSeconds, room), (rows) => {
        const byEndpoint = new Map<WebhookId, Array<typeof rows[number]>>()
        for (const row of rows) {
          const list = byEndpoint.get(row.webhook_id) ?? []
          list.push(row)
          byEndpoint.set(row.webhook_id, list)
        }
        for (const list of byEndpoint.values()) enqueue(list[0]!, list)
        return rows.length === room ? rows.length : 0
      })
    })
    yield* claimOnce.pipe(
      Effect.repeat({ while: (n) => n > 0 }),
      Effect.catchAllCause((cause) => Effect.logWarning("webhook deliveries could not be claimed", cause)),
      Effect.repeat(Schedule.spaced(Duration.millis(pollMs))),
      Effect.forkScoped
    )
    yield* Effect.suspend(() => repo.renew(owner, leaseSeconds, [...held])).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("webhook leases could not be renewed", cause)),
      Effect.repeat(Schedule.spaced(Duration.seconds(leaseSeconds / 3))),
      Effect.forkScoped
    )
    yield* repo.prune(Duration.toSeconds(config.eventRetention)).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("webhook delivery retention failed", cause)),
      Effect.delay(Duration.millis(PRUNE_EVERY_MS * (0.5 + Math.random()))),
      Effect.forever,
      Effect.forkScoped
    )

    /** The first attempt of a delivery this node holds, recorded (or `timeoutMs` and a second passed). */
    const attempted = (id: DeliveryId) =>
      Effect.async<void>((resume) => {
        if (!held.has(id)) return resume(Effect.void)
        const wake = () => resume(Effect.void)
        waiters.set(id, [...(waiters.get(id) ?? []), wake])
        return Effect.sync(() => waiters.set(id, (waiters.get(id) ?? []).filter((w) => w !== wake)))
      }).pipe(Effect.timeout(Duration.millis(timeoutMs + 1000)), Effect.ignore)

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
        enqueue(delivery, [delivery])
        return attempted(delivery.id)
      })

    return { owner, leaseSeconds, changed, sendNow } as const
  }),
  dependencies: [WebhookRepo.Default, CredentialVault.Default, Egress.Default, WebhookDisabler.Default]
}) {}
