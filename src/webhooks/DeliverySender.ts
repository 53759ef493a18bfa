import { Duration, Effect, Runtime, Schedule } from "effect"
import * as Crypto from "node:crypto"
import * as Os from "node:os"
import type { DeliveryId, WebhookId } from "../../schema/Webhooks.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { Egress } from "../connectors/Egress.js"
import { everyJittered } from "../support/Periodic.js"
import { type AttemptResult, DeliveryRepo, type Endpoint, type HeldDelivery } from "./DeliveryRepo.js"
import { WebhookDisabler } from "./WebhookDisabler.js"
import { type Answer, send } from "./WebhookSender.js"
import { secretKey } from "./WebhookSignature.js"

/** Deliveries a node holds (queued or in flight) at most; past it, new ones wait in the table for any node. */
export const HELD_MAX = 5000
/** Deliveries claimed per statement. */
const CLAIM_BATCH = 200
/** How often finished deliveries past the event retention are deleted (jittered), by any node. */
const PRUNE_EVERY = Duration.minutes(5)

/** The context a webhook's secret is sealed under: a ciphertext copied to another row does not open. */
export const secretContext = (organizationId: string, webhookId: string) => ["webhook", organizationId, webhookId]

interface Queued extends HeldDelivery {
  readonly webhookId: WebhookId
  readonly keys: ReadonlyArray<Buffer>
}

interface Queue {
  readonly items: Array<Queued>
  inFlight: number
  /** Where they go: the endpoint's URL as last read (a change reaches what waits already). */
  url: string
}

/**
 * Sends the deliveries this node holds a lease on (docs/guides/webhooks.md): per endpoint, in the order given,
 * up to SWITCHYARD_WEBHOOK_CONCURRENCY at a time. Attempts are recorded in batches (one statement for all that
 * ended meanwhile); a failure is retried on the schedule (SWITCHYARD_WEBHOOK_BACKOFF, ±10% jitter) by whichever
 * node claims it when due. The node renews the leases of what it holds; a killed node's deliveries come back to
 * all nodes when their leases run out (the request timeout and 10 s), and are sent again under the same
 * `webhook-id`. A 410, or a delivery failed past the schedule, disables the endpoint (WebhookDisabler).
 */
export class DeliverySender extends Effect.Service<DeliverySender>()("webhooks/DeliverySender", {
  scoped: Effect.gen(function*() {
    const repo = yield* DeliveryRepo
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

    const resultOf = (item: Queued, answer: Answer): AttemptResult => {
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

    /** A disabled or deleted endpoint: what waits for it here is not sent (its leases run out). */
    const forget = (webhookId: WebhookId) => {
      const queue = queues.get(webhookId)
      if (queue !== undefined) {
        for (const item of queue.items.splice(0)) held.delete(item.id)
      }
    }

    /**
     * The enabled endpoints and their URLs, as just read: what waits here for one disabled or deleted (on any node)
     * is not sent, and what waits for one whose URL changed goes to the new URL.
     */
    const follow = (enabled: ReadonlyMap<WebhookId, string>) => {
      for (const [webhookId, queue] of queues) {
        const url = enabled.get(webhookId)
        if (url === undefined) forget(webhookId)
        else queue.url = url
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
        void send(egress.dispatcher, { ...item, url: queue.url }, timeoutMs, egress.explain).then((answer) => {
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
        queue = { items: [], inFlight: 0, url: endpoint.url }
        queues.set(endpoint.webhook_id, queue)
      }
      queue.url = endpoint.url
      for (const d of deliveries) {
        if (held.has(d.id)) continue
        held.add(d.id)
        queue.items.push({ ...d, webhookId: endpoint.webhook_id, keys })
      }
      drain(endpoint.webhook_id, queue)
    }

    // due deliveries no node holds: retries, a killed node's, those made while this node held enough
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
    yield* everyJittered(
      PRUNE_EVERY,
      "webhook delivery retention",
      repo.prune(Duration.toSeconds(config.eventRetention))
    )
      .pipe(Effect.forkScoped)

    /** The attempt of a delivery this node holds, recorded (or `timeoutMs` and a second passed). */
    const attempted = (id: DeliveryId) =>
      Effect.async<void>((resume) => {
        if (!held.has(id)) return resume(Effect.void)
        const wake = () => resume(Effect.void)
        waiters.set(id, [...(waiters.get(id) ?? []), wake])
        return Effect.sync(() => waiters.set(id, (waiters.get(id) ?? []).filter((w) => w !== wake)))
      }).pipe(Effect.timeout(Duration.millis(timeoutMs + 1000)), Effect.ignore)

    /** The lease to take on new deliveries: this node's, or none when it holds enough (any node claims them). */
    const lease = () => held.size < HELD_MAX ? { owner, leaseSeconds } : undefined

    return { owner, leaseSeconds, lease, enqueue, forget, follow, attempted } as const
  }),
  dependencies: [DeliveryRepo.Default, CredentialVault.Default, Egress.Default, WebhookDisabler.Default]
}) {}
