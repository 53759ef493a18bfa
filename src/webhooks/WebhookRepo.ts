import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrganizationId, UserId } from "../../schema/Ids.js"
import type { WebhookId } from "../../schema/Webhooks.js"
import { keyset } from "../db/Keyset.js"
import type { PageRequest } from "../support/Cursor.js"

export interface WebhookRow {
  readonly id: WebhookId
  readonly organization_id: OrganizationId
  readonly url: string
  readonly description: string
  readonly event_types: ReadonlyArray<string>
  readonly enabled: boolean
  readonly disabled_reason: string | null
  readonly secret: Uint8Array
  readonly secret_key_version: number
  readonly previous_secret: Uint8Array | null
  readonly previous_secret_key_version: number | null
  readonly previous_secret_expires_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

// the two-key advisory locks of an organization's endpoint count (their creation under the limit)
const COUNT_LOCKS = 0x77686b73

const WEBHOOK_COLUMNS = `id, organization_id, url, description, event_types, enabled, disabled_reason, secret,
  secret_key_version, previous_secret, previous_secret_key_version, previous_secret_expires_at, created_at, updated_at`

/** The endpoints' statements (their deliveries: DeliveryRepo.ts). A failed statement is a defect. */
export class WebhookRepo extends Effect.Service<WebhookRepo>()("webhooks/WebhookRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const insert = (row: {
      readonly id: WebhookId
      readonly organization_id: OrganizationId
      readonly url: string
      readonly description: string
      readonly event_types: ReadonlyArray<string>
      readonly enabled: boolean
      readonly secret: Uint8Array
      readonly secret_key_version: number
      readonly position: bigint
      readonly created_by: UserId | null
      readonly created_by_key: string
    }) =>
      sql<WebhookRow>`
        INSERT INTO webhooks (id, organization_id, url, description, event_types, enabled, disabled_reason, secret,
          secret_key_version, position, created_by, created_by_key)
        VALUES (${row.id}, ${row.organization_id}, ${row.url}, ${row.description}, ARRAY(SELECT jsonb_array_elements_text(${
        JSON.stringify(row.event_types)
      }::jsonb)),
          ${row.enabled}, ${row.enabled ? null : "manual"}, ${row.secret}, ${row.secret_key_version},
          ${row.position.toString()}, ${row.created_by}, ${row.created_by_key})
        RETURNING ${sql.literal(WEBHOOK_COLUMNS)}`.pipe(Effect.map(([r]) => r!), Effect.orDie)

    /**
     * With `lock`, the row is locked until the caller's transaction ends: `update`, a change reads what it
     * changes; `share`, a ping or retry is not outrun by a disable (which waits, then cancels what it made).
     */
    const find = (organizationId: OrganizationId, id: WebhookId, lock?: "update" | "share") =>
      sql<WebhookRow>`
        SELECT ${sql.literal(WEBHOOK_COLUMNS)} FROM webhooks WHERE id = ${id} AND organization_id = ${organizationId}
        ${lock === "update" ? sql`FOR UPDATE` : lock === "share" ? sql`FOR SHARE` : sql``}`.pipe(
        Effect.map(([r]) => r),
        Effect.orDie
      )

    /** Oldest first; with `page`, a page of them (see `keyset`). */
    const list = (organizationId: OrganizationId, page?: PageRequest) => {
      const k = keyset(sql, "webhooks", page)
      return sql<WebhookRow>`
        SELECT ${sql.literal(WEBHOOK_COLUMNS)} FROM webhooks WHERE organization_id = ${organizationId}
        ${k.after} ${k.order} ${k.limit}`.pipe(Effect.orDie)
    }

    const count = (organizationId: OrganizationId) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM webhooks WHERE organization_id = ${organizationId}`
        .pipe(Effect.map(([r]) => r?.n ?? 0), Effect.orDie)

    /**
     * The organization's endpoints counted, with its creations held until the caller's transaction ends: two
     * creations at once each see the other's row (the limit is not passed by racing).
     */
    const countLocked = (organizationId: OrganizationId) =>
      sql`SELECT pg_advisory_xact_lock(${COUNT_LOCKS}, hashtext(${organizationId}))`.pipe(
        Effect.orDie,
        Effect.zipRight(count(organizationId))
      )

    /**
     * Changes the endpoint. Enabling a disabled one clears its reason; `position`, when given, moves it on to
     * there (never back: "now" can be below events already passed, while an older transaction still runs).
     */
    const update = (
      organizationId: OrganizationId,
      id: WebhookId,
      fields: {
        readonly url: string
        readonly description: string
        readonly event_types: ReadonlyArray<string>
        readonly enabled: boolean
        readonly position?: bigint | undefined
      }
    ) =>
      sql<WebhookRow>`
        UPDATE webhooks SET url = ${fields.url}, description = ${fields.description},
          event_types = ARRAY(SELECT jsonb_array_elements_text(${
        JSON.stringify(fields.event_types)
      }::jsonb)), enabled = ${fields.enabled},
          disabled_reason = CASE WHEN ${fields.enabled} THEN NULL WHEN enabled THEN 'manual' ELSE disabled_reason END,
          ${fields.position === undefined ? sql`` : sql`position = greatest(position, ${fields.position.toString()}),`}
          updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId}
        RETURNING ${sql.literal(WEBHOOK_COLUMNS)}`.pipe(Effect.map(([r]) => r), Effect.orDie)

    const remove = (organizationId: OrganizationId, id: WebhookId) =>
      sql`DELETE FROM webhooks WHERE id = ${id} AND organization_id = ${organizationId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The new secret in place, the current one kept as the previous until `previousUntil`. */
    const rotate = (
      organizationId: OrganizationId,
      id: WebhookId,
      secret: { readonly sealed: Uint8Array; readonly keyVersion: number },
      previousUntil: Date
    ) =>
      sql<WebhookRow>`
        UPDATE webhooks SET previous_secret = secret, previous_secret_key_version = secret_key_version,
          previous_secret_expires_at = ${previousUntil}, secret = ${secret.sealed},
          secret_key_version = ${secret.keyVersion}, updated_at = now()
        WHERE id = ${id} AND organization_id = ${organizationId}
        RETURNING ${sql.literal(WEBHOOK_COLUMNS)}`.pipe(Effect.map(([r]) => r), Effect.orDie)

    /**
     * Cancels the endpoint's pending deliveries (it is disabled: nothing waits for it; a manual retry still sends
     * one). A statement of its own, after the endpoint's row is written: it sees what a fan-out committed first.
     */
    const cancelPending = (id: WebhookId) =>
      sql`
        UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, lease_until = NULL,
          lease_owner = NULL
        WHERE webhook_id = ${id} AND status = 'pending'`.pipe(Effect.asVoid, Effect.orDie)

    /** Disables an enabled endpoint (410, or failing past the schedule); undefined when it was not enabled. */
    const disable = (id: WebhookId, reason: "gone" | "failing") =>
      sql<{ organization_id: OrganizationId; url: string }>`
        UPDATE webhooks SET enabled = false, disabled_reason = ${reason}, updated_at = now()
        WHERE id = ${id} AND enabled RETURNING organization_id, url`.pipe(Effect.map(([r]) => r), Effect.orDie)

    return { insert, find, list, count, countLocked, update, remove, rotate, disable, cancelPending } as const
  })
}) {}
