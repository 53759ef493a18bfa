import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { v7 as uuidV7 } from "uuid"
import type { OrganizationId } from "../../schema/Ids.js"
import type { DeliveryId, WebhookId } from "../../schema/Webhooks.js"
import { PgPool, prepared } from "../db/PgPool.js"

/** What a node needs to send to an endpoint: where, and the sealed secrets to sign with. */
export interface Endpoint {
  readonly webhook_id: WebhookId
  readonly organization_id: OrganizationId
  readonly url: string
  readonly secret: Uint8Array
  readonly secret_key_version: number
  /** Only while it has not expired. */
  readonly previous_secret: Uint8Array | null
  readonly previous_secret_key_version: number | null
}

/** A delivery as a node holds it to send. */
export interface HeldDelivery {
  readonly id: DeliveryId
  readonly body: string
  /** Attempts made before this one. */
  readonly attempts: number
}

/** An enabled endpoint's place in its organization's event log. */
export interface Follower {
  readonly id: WebhookId
  readonly organization_id: OrganizationId
  readonly event_types: ReadonlyArray<string>
  readonly position: string
  readonly url: string
}

/** The result of an attempt, to record. */
export interface AttemptResult {
  readonly id: DeliveryId
  readonly webhook_id: WebhookId
  readonly owner: string
  readonly attempt: number
  /** `retry`: failed, tried again at `next_at`; `exhausted`: failed past the schedule; `gone`: 410. */
  readonly outcome: "succeeded" | "retry" | "exhausted" | "gone"
  readonly status_code: number | null
  readonly latency_ms: number
  readonly excerpt: string | null
  readonly error: string | null
  readonly at: string
  readonly next_at: string | null
  /** The schedule's last automatic attempt: an exhausted delivery then disables a failing endpoint. */
  readonly last_scheduled: boolean
}

export interface DeliveryRow {
  readonly id: DeliveryId
  readonly event_id: string | null
  readonly event_type: string
  readonly status: "pending" | "succeeded" | "failed" | "cancelled"
  readonly next_attempt_at: Date | null
  readonly created_at: Date
  readonly delivered_at: Date | null
  readonly attempts: ReadonlyArray<{
    readonly attempt: number
    readonly at: string
    readonly status_code: number | null
    readonly latency_ms: number
    readonly response_excerpt: string | null
    readonly error: string | null
  }>
}

/** A ping's delivery id: `msg_` and a time-ordered UUID's hex. */
export const newDeliveryId = () => `msg_${uuidV7().replaceAll("-", "")}` as DeliveryId

/**
 * An event's delivery id: the same for the same endpoint and event whoever makes it, so a delivery made again
 * (its statement lost with the database's last commits) keeps its `webhook-id`; the event id first, so the
 * deliveries of one statement sort in log order.
 */
export const eventDeliveryId = (webhookId: string, eventId: bigint) =>
  `msg_${eventId.toString(16).padStart(16, "0")}${
    Crypto.createHash("sha256").update(webhookId).digest("hex").slice(0, 16)
  }` as DeliveryId

/**
 * The fan-out and the attempts' records commit without waiting for the WAL flush (synchronous_commit off for
 * their transaction: the flush cost tens of ms on a busy disk, on the path from an event to its delivery). A
 * database crash can lose the last few hundred ms of them: the deliveries are then made again under the same
 * ids (eventDeliveryId), or sent again; at least once either way. A node's crash loses nothing.
 */
const ASYNC_COMMIT = "(SELECT set_config('synchronous_commit', 'off', true)) async_commit"

const ENDPOINT = `w.id AS webhook_id, w.organization_id, w.url, w.secret, w.secret_key_version,
  CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret,
  w.previous_secret_key_version`

/**
 * The outbox's statements (migration 0019): the endpoints' positions in the event log, their deliveries, leases
 * and attempts. A failed statement is a defect.
 */
export class DeliveryRepo extends Effect.Service<DeliveryRepo>()("webhooks/DeliveryRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const pool = yield* PgPool

    const followersStatement = prepared<Follower>(
      pool,
      "webhooks_followers",
      "SELECT id, organization_id, event_types, position::text AS position, url FROM webhooks WHERE enabled"
    )
    /** Every enabled endpoint, its position and URL. */
    const followers = followersStatement([]).pipe(Effect.orDie)

    const positionStatement = prepared<{ position: string; enabled: boolean }>(
      pool,
      "webhooks_position",
      "SELECT position::text AS position, enabled FROM webhooks WHERE id = $1"
    )
    /** The endpoint's position now; undefined when it is gone or disabled. */
    const positionOf = (id: WebhookId) =>
      positionStatement([id]).pipe(
        Effect.map(([r]) => r === undefined || !r.enabled ? undefined : r.position),
        Effect.orDie
      )

    const fanOutStatement = prepared<Endpoint & { moved: number; delivered: Array<HeldDelivery> }>(
      pool,
      "webhooks_fan_out",
      `WITH moved AS (
        UPDATE webhooks w SET position = $3::bigint FROM ${ASYNC_COMMIT}
        WHERE w.id = $1 AND w.position = $2::bigint AND w.enabled
        RETURNING ${ENDPOINT}
      ),
      inserted AS (
        INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, body, status,
          next_attempt_at, lease_until, lease_owner)
        SELECT e.did, m.webhook_id, m.organization_id, e.id, e.type,
          e.body, 'pending', now(),
          CASE WHEN $7::boolean THEN now() + make_interval(secs => $8) END, CASE WHEN $7::boolean THEN $9 END
        FROM moved m, unnest($4::bigint[], $5::text[], $6::text[], $10::text[]) WITH ORDINALITY AS e(id, type, body, did, o)
        ORDER BY e.o
        ON CONFLICT DO NOTHING
        RETURNING id, event_id, body
      )
      SELECT (SELECT count(*) FROM moved)::int AS moved, m.*,
        coalesce((SELECT json_agg(json_build_object('id', i.id, 'body', i.body, 'attempts', 0) ORDER BY i.event_id)
          FROM inserted i), '[]') AS delivered
      FROM (SELECT 1) one LEFT JOIN moved m ON true`
    )
    /**
     * Moves the endpoint from `from` to `to` and inserts the deliveries of `events`, in one statement, if the
     * endpoint is still enabled at `from` (`moved` 0: another node moved it first, or it was disabled; the
     * endpoint's fields are then null). With `hold`, the new
     * deliveries are leased to `owner` (it sends them now); without, any node claims them.
     */
    const fanOut = (
      id: WebhookId,
      from: string,
      to: string,
      events: ReadonlyArray<{ readonly id: bigint; readonly type: string; readonly body: string }>,
      hold: { readonly owner: string; readonly leaseSeconds: number } | undefined
    ) =>
      fanOutStatement([
        id,
        from,
        to,
        events.map((e) => e.id.toString()),
        events.map((e) => e.type),
        events.map((e) => e.body),
        hold !== undefined,
        hold?.leaseSeconds ?? 0,
        hold?.owner ?? null,
        events.map((e) => eventDeliveryId(id, e.id))
      ]).pipe(Effect.map(([r]) => r!), Effect.orDie)

    const claimStatement = prepared<HeldDelivery & Endpoint>(
      pool,
      "webhooks_claim",
      `WITH due AS (
        SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
          AND w.enabled
        ORDER BY d.next_attempt_at, d.event_id LIMIT $3
        FOR UPDATE OF d SKIP LOCKED
      ),
      claimed AS (
        UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => $2), lease_owner = $1
        FROM due WHERE d.id = due.id
        RETURNING d.id, d.body, d.attempts, d.webhook_id, d.event_id, d.next_attempt_at
      )
      SELECT c.id, c.body, c.attempts, ${ENDPOINT}
      FROM claimed c JOIN webhooks w ON w.id = c.webhook_id ORDER BY c.next_attempt_at, c.event_id`
    )
    /** Leases up to `limit` due deliveries no node holds (nor a live lease) to `owner`. */
    const claim = (owner: string, leaseSeconds: number, limit: number) =>
      claimStatement([owner, leaseSeconds, limit]).pipe(Effect.orDie)

    const renewStatement = prepared(
      pool,
      "webhooks_renew",
      `UPDATE webhook_deliveries SET lease_until = now() + make_interval(secs => $2)
       WHERE id = ANY($3::text[]) AND lease_owner = $1 AND status = 'pending'`
    )
    /** Extends the leases `owner` holds on these deliveries (waiting in its queues or in flight). */
    const renew = (owner: string, leaseSeconds: number, ids: ReadonlyArray<string>) =>
      ids.length === 0 ? Effect.void : renewStatement([owner, leaseSeconds, ids]).pipe(Effect.asVoid, Effect.orDie)

    const recordStatement = prepared<{ webhook_id: WebhookId; outcome: "gone" | "exhausted"; id: DeliveryId }>(
      pool,
      "webhooks_record",
      `WITH r AS (
        SELECT r.* FROM ${ASYNC_COMMIT}, jsonb_to_recordset($1::jsonb) AS r(id text, webhook_id uuid, owner text,
          attempt int,
          outcome text, status_code int, latency_ms float8, excerpt text, error text, at timestamptz,
          next_at timestamptz, last_scheduled boolean)
      ),
      attempts AS (
        INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, latency_ms, response_excerpt, error)
        SELECT r.id, r.attempt, r.at, r.status_code, r.latency_ms, r.excerpt, r.error
        FROM r JOIN webhook_deliveries d ON d.id = r.id
        ON CONFLICT DO NOTHING
      ),
      updated AS (
        UPDATE webhook_deliveries d SET
          status = CASE
            WHEN r.outcome = 'succeeded' THEN 'succeeded'
            WHEN d.status = 'cancelled' THEN 'cancelled'
            WHEN r.outcome = 'retry' THEN 'pending' ELSE 'failed' END,
          attempts = greatest(d.attempts, r.attempt),
          next_attempt_at = CASE WHEN r.outcome = 'retry' AND d.status = 'pending' THEN r.next_at END,
          first_attempt_at = coalesce(d.first_attempt_at, r.at),
          delivered_at = CASE WHEN r.outcome = 'succeeded' THEN r.at ELSE d.delivered_at END,
          lease_until = NULL, lease_owner = NULL
        FROM r
        WHERE d.id = r.id AND (d.status = 'cancelled'
          OR (d.status = 'pending' AND (r.outcome = 'succeeded' OR d.lease_owner = r.owner)))
        RETURNING d.id, d.webhook_id, d.status, d.first_attempt_at, r.outcome, r.last_scheduled
      )
      SELECT u.webhook_id, u.outcome, u.id FROM updated u JOIN webhooks w ON w.id = u.webhook_id
      WHERE w.enabled AND u.status <> 'cancelled' AND (u.outcome = 'gone' OR (u.outcome = 'exhausted' AND u.last_scheduled
        AND (w.last_success_at IS NULL OR w.last_success_at < u.first_attempt_at)
        AND NOT EXISTS (SELECT 1 FROM r WHERE r.webhook_id = u.webhook_id AND r.outcome = 'succeeded')))`
    )
    // the endpoints' last success, in a statement of its own: the deliveries' rows are not held meanwhile (a
    // disable holds the endpoint's row, then cancels its deliveries: the other order would deadlock with it)
    const successStatement = prepared(
      pool,
      "webhooks_success",
      `UPDATE webhooks w SET last_success_at = greatest(w.last_success_at, s.at)
       FROM ${ASYNC_COMMIT}, (
         SELECT webhook_id, max(at) AS at FROM jsonb_to_recordset($1::jsonb) AS r(webhook_id uuid, at timestamptz)
         GROUP BY webhook_id
       ) s
       WHERE w.id = s.webhook_id`
    )
    /**
     * Records attempts and their deliveries' new state (a failure only while its node still holds the lease; a
     * success always), then the endpoints' last success. An attempt in flight when its delivery was cancelled
     * (the endpoint disabled) is counted, and the delivery stays cancelled unless it succeeded. Returns the
     * endpoints to disable: a 410, or a delivery failed past the schedule with no success of the endpoint since
     * its first attempt.
     */
    const record = (results: ReadonlyArray<AttemptResult>) =>
      Effect.gen(function*() {
        const doomed = yield* recordStatement([JSON.stringify(results)])
        const succeeded = results.filter((r) => r.outcome === "succeeded")
        if (succeeded.length > 0) {
          yield* successStatement([JSON.stringify(succeeded.map((r) => ({ webhook_id: r.webhook_id, at: r.at })))])
        }
        return doomed
      }).pipe(Effect.orDie)

    /** Makes a delivery due now, held by `owner` (a manual retry); undefined when it is not the endpoint's. */
    const retryNow = (webhookId: WebhookId, id: DeliveryId, owner: string, leaseSeconds: number) =>
      sql<HeldDelivery & Endpoint>`
        WITH held AS (
          UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(),
            lease_until = now() + make_interval(secs => ${leaseSeconds}), lease_owner = ${owner}
          WHERE d.id = ${id} AND d.webhook_id = ${webhookId}
          RETURNING d.id, d.body, d.attempts, d.webhook_id
        )
        SELECT h.id, h.body, h.attempts, ${sql.literal(ENDPOINT)} FROM held h JOIN webhooks w ON w.id = h.webhook_id`
        .pipe(Effect.map(([r]) => r), Effect.orDie)

    /** A ping's delivery, held by `owner`. */
    const insertPing = (webhookId: WebhookId, id: DeliveryId, body: string, owner: string, leaseSeconds: number) =>
      sql<HeldDelivery & Endpoint>`
        WITH held AS (
          INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, body, status,
            next_attempt_at, lease_until, lease_owner)
          SELECT ${id}, w.id, w.organization_id, NULL, 'webhook.ping', ${body}, 'pending', now(),
            now() + make_interval(secs => ${leaseSeconds}), ${owner}
          FROM webhooks w WHERE w.id = ${webhookId}
          RETURNING id, body, attempts, webhook_id
        )
        SELECT h.id, h.body, h.attempts, ${sql.literal(ENDPOINT)} FROM held h JOIN webhooks w ON w.id = h.webhook_id`
        .pipe(Effect.map(([r]) => r), Effect.orDie)

    const deliveryColumns = `d.id, d.event_id::text AS event_id, d.event_type, d.status, d.next_attempt_at,
      d.created_at, d.delivered_at,
      coalesce((SELECT json_agg(a ORDER BY a.attempt) FROM (
        SELECT attempt, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, status_code,
          latency_ms, response_excerpt, error
        FROM webhook_attempts WHERE delivery_id = d.id ORDER BY attempt DESC LIMIT 50) a), '[]') AS attempts`

    /** The endpoint's deliveries, newest first, after the keyset position. */
    const deliveries = (
      webhookId: WebhookId,
      options: {
        readonly status?: string | undefined
        readonly after?: { readonly at: Date; readonly id: string } | undefined
        readonly limit: number
      }
    ) =>
      sql<DeliveryRow>`
        SELECT ${sql.literal(deliveryColumns)} FROM webhook_deliveries d
        WHERE d.webhook_id = ${webhookId}
        ${options.status === undefined ? sql`` : sql`AND d.status = ${options.status}`}
        ${
        options.after === undefined ? sql`` : sql`AND (d.created_at, d.id) < (${options.after.at}, ${options.after.id})`
      }
        ORDER BY d.created_at DESC, d.id DESC LIMIT ${options.limit + 1}`.pipe(Effect.orDie)

    const delivery = (webhookId: WebhookId, id: DeliveryId) =>
      sql<DeliveryRow>`
        SELECT ${sql.literal(deliveryColumns)} FROM webhook_deliveries d
        WHERE d.webhook_id = ${webhookId} AND d.id = ${id}`.pipe(Effect.map(([r]) => r), Effect.orDie)

    /** Deletes finished deliveries (and their attempts) older than `seconds`, a batch at a time. */
    const prune = (seconds: number) =>
      sql<{ n: number }>`
        WITH doomed AS (
          SELECT id FROM webhook_deliveries
          WHERE created_at < now() - make_interval(secs => ${seconds}) AND status <> 'pending' LIMIT 5000
        ), deleted AS (DELETE FROM webhook_deliveries d USING doomed WHERE d.id = doomed.id RETURNING 1)
        SELECT count(*)::int AS n FROM deleted`.pipe(Effect.map(([r]) => r?.n ?? 0), Effect.orDie)

    return {
      followers,
      positionOf,
      fanOut,
      claim,
      renew,
      record,
      retryNow,
      insertPing,
      deliveries,
      delivery,
      prune
    } as const
  })
}) {}
