import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, NotFound, Unprocessable } from "../../schema/Errors.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { formatTimestamp } from "../../schema/Timestamp.js"
import {
  CreatedWebhook,
  type CreateWebhook,
  DeliveryId,
  type UpdateWebhook,
  Webhook,
  type WebhookDelivery,
  type WebhookId
} from "../../schema/Webhooks.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { Egress } from "../connectors/Egress.js"
import { checkUrl } from "../connectors/egress/GuardedDispatcher.js"
import { transactionIn } from "../db/Transaction.js"
import { EventLog } from "../events/EventLog.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { listOrPage, pageOf, type PageParams, positionOf } from "../support/Cursor.js"
import { DeliveryRepo, type DeliveryRow, newDeliveryId } from "./DeliveryRepo.js"
import { secretContext } from "./DeliverySender.js"
import { WebhookDispatcher } from "./WebhookDispatcher.js"
import { WebhookRepo, type WebhookRow } from "./WebhookRepo.js"
import { newSecret } from "./WebhookSignature.js"

/** How long a rotated-out secret still signs deliveries. */
export const PREVIOUS_SECRET_VALID_MS = 24 * 60 * 60 * 1000

const toWebhook = (row: WebhookRow) =>
  new Webhook({
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: row.event_types as Webhook["event_types"],
    enabled: row.enabled,
    disabled_reason: row.disabled_reason as Webhook["disabled_reason"],
    previous_secret_expires_at: row.previous_secret_expires_at !== null && row.previous_secret_expires_at > new Date()
      ? row.previous_secret_expires_at
      : null,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

const toDelivery = (row: DeliveryRow): WebhookDelivery => ({
  id: row.id,
  event_id: row.event_id,
  event_type: row.event_type,
  status: row.status,
  next_attempt_at: row.status === "pending" ? row.next_attempt_at : null,
  attempts: row.attempts.map((a) => ({ ...a, at: new Date(a.at) })),
  created_at: row.created_at,
  delivered_at: row.delivered_at
})

/**
 * Webhook endpoints (issue 22; docs/guides/webhooks.md): Admins and above manage them, with keys not limited
 * to agents (an endpoint receives every event of the organization it asks for, audit records included).
 */
export class Webhooks extends Effect.Service<Webhooks>()("webhooks/Webhooks", {
  effect: Effect.gen(function*() {
    const repo = yield* WebhookRepo
    const outbox = yield* DeliveryRepo
    const audit = yield* AuditLog
    const log = yield* EventLog
    const egress = yield* Egress
    const vault = yield* CredentialVault
    const dispatcher = yield* WebhookDispatcher
    const config = yield* SwitchyardConfig
    const transaction = transactionIn(yield* SqlClient.SqlClient)

    /** Refuses a URL the egress guard would refuse (checked again at every delivery, on the address dialled). */
    const reachable = (url: string) =>
      Effect.promise(() => checkUrl(url, egress.policy).catch(() => undefined)).pipe(
        Effect.flatMap((refused) =>
          refused === undefined ? Effect.void : Effect.fail(Unprocessable.of(
            `The webhook URL is not allowed: ${egress.explain(refused)}.`,
            "webhook_url_not_allowed",
            { host: refused.host, reason: refused.reason }
          ))
        )
      )

    const find = (principal: Principal, id: WebhookId, lock?: "update" | "share") =>
      Effect.flatMap(
        repo.find(principal.organizationId, id, lock),
        (row) => row === undefined ? Effect.fail(NotFound.of("Webhook", id)) : Effect.succeed(row)
      )

    const create = Effect.fn("Webhooks.create")(function*(principal: Principal, input: CreateWebhook) {
      yield* requireOrganizationKey(principal, Policy.createWebhooks)
      yield* reachable(input.url)
      const id = Crypto.randomUUID() as WebhookId
      const secret = newSecret()
      const sealed = vault.seal(secret, secretContext(principal.organizationId, id))
      // deliveries begin with what commits from now on
      const position = yield* log.position(principal.organizationId)
      const limit = config.webhooks.maxEndpoints
      const row = yield* transaction(Effect.gen(function*() {
        if (limit > 0 && (yield* repo.countLocked(principal.organizationId)) >= limit) {
          return yield* new Conflict({
            code: "webhook_limit_reached",
            message: `The organization has ${limit} webhook endpoints, as many as it may ` +
              "(SWITCHYARD_WEBHOOK_MAX_ENDPOINTS; disabled ones count too): delete one it no longer needs, or ask " +
              "an operator to raise the limit.",
            details: { limit }
          })
        }
        return yield* repo.insert({
          id,
          organization_id: principal.organizationId,
          url: input.url,
          description: input.description ?? "",
          event_types: [...new Set(input.event_types ?? [])],
          enabled: input.enabled ?? true,
          secret: sealed.sealed,
          secret_key_version: sealed.keyVersion,
          position,
          created_by: principal.userId,
          created_by_key: principal.keyId
        }).pipe(audit.recorded(principal, (row) => ({
          action: "CREATE_WEBHOOK",
          targets: [{ type: "webhook", id: row.id, name: row.url }],
          details: { url: row.url, event_types: row.event_types, enabled: row.enabled }
        })))
      }))
      yield* dispatcher.changed(principal.organizationId, id, row.enabled)
      return new CreatedWebhook({ ...toWebhook(row), secret })
    })

    /** Every endpoint, or with `limit`/`cursor` a page of them (`total` counts them all). */
    const list = Effect.fn("Webhooks.list")(function*(
      principal: Principal,
      params: PageParams = {}
    ) {
      yield* requireOrganizationKey(principal, Policy.readWebhooks)
      const { organizationId } = principal
      const { next_cursor, rows, total } = yield* listOrPage(
        params,
        (page) => repo.list(organizationId, page),
        repo.count(organizationId)
      )
      return { items: rows.map(toWebhook), total, next_cursor }
    })

    const get = Effect.fn("Webhooks.get")(function*(principal: Principal, id: WebhookId) {
      yield* requireOrganizationKey(principal, Policy.readWebhooks)
      return toWebhook(yield* find(principal, id))
    })

    const update = Effect.fn("Webhooks.update")(function*(principal: Principal, id: WebhookId, input: UpdateWebhook) {
      yield* requireOrganizationKey(principal, Policy.changeWebhooks)
      // a name's lookup, before the row is held; enabling checks the URL kept (the egress policy may have changed)
      if (input.url !== undefined) yield* reachable(input.url)
      else if (input.enabled === true) {
        const current = yield* find(principal, id)
        if (!current.enabled) yield* reachable(current.url)
      }
      // the row locked from its read to its write: two changes at once (a disable and a new URL) each apply to
      // what the other wrote, rather than the later enabling again what the earlier disabled
      const { row, written } = yield* transaction(Effect.gen(function*() {
        const current = yield* find(principal, id, "update")
        const fields = {
          url: input.url ?? current.url,
          description: input.description ?? current.description,
          event_types: input.event_types === undefined ? current.event_types : [...new Set(input.event_types)],
          enabled: input.enabled ?? current.enabled
        }
        // nothing to change (`{}`, what it holds already): not written (`updated_at` stays), nothing audited
        if (
          fields.url === current.url && fields.description === current.description &&
          fields.enabled === current.enabled && fields.event_types.length === current.event_types.length &&
          fields.event_types.every((t) => current.event_types.includes(t))
        ) return { row: current, written: false }
        // enabled again (or for the first time): deliveries begin with what commits from now on, as at creation;
        // what happened while it was disabled is not replayed (deliveries made before it was disabled go on)
        const position = fields.enabled && !current.enabled ? yield* log.position(principal.organizationId) : undefined
        const row = yield* repo.update(principal.organizationId, id, { ...fields, position }).pipe(
          audit.recorded(principal, (row) =>
            row === undefined || changedFields(input).length === 0 ? undefined : {
              action: "UPDATE_WEBHOOK",
              targets: [{ type: "webhook", id, name: row.url }],
              details: {
                changed: changedFields(input),
                url: row.url,
                event_types: row.event_types,
                enabled: row.enabled
              }
            })
        )
        if (row === undefined) return yield* NotFound.of("Webhook", id)
        // disabled: what waits for it is cancelled (not held to resume: enabled again, it starts at the present);
        // enabled: any left pending while it was disabled (kept so by releases before this rule) likewise
        if (row.enabled !== current.enabled) yield* repo.cancelPending(id)
        return { row, written: true }
      }))
      if (written) yield* dispatcher.changed(principal.organizationId, id, row.enabled)
      return toWebhook(row)
    })

    const remove = Effect.fn("Webhooks.remove")(function*(principal: Principal, id: WebhookId) {
      yield* requireOrganizationKey(principal, Policy.deleteWebhooks)
      const current = yield* find(principal, id)
      const removed = yield* repo.remove(principal.organizationId, id).pipe(
        audit.recorded(
          principal,
          (removed) =>
            removed ? { action: "DELETE_WEBHOOK", targets: [{ type: "webhook", id, name: current.url }] } : undefined
        )
      )
      if (!removed) return yield* NotFound.of("Webhook", id)
      yield* dispatcher.changed(principal.organizationId, id, false)
    })

    /** A new secret; the current one keeps signing (beside it) for 24 hours. */
    const rotate = Effect.fn("Webhooks.rotate")(function*(principal: Principal, id: WebhookId) {
      yield* requireOrganizationKey(principal, Policy.rotateWebhookSecrets)
      yield* find(principal, id)
      const secret = newSecret()
      const sealed = vault.seal(secret, secretContext(principal.organizationId, id))
      const until = new Date(Date.now() + PREVIOUS_SECRET_VALID_MS)
      const row = yield* repo.rotate(principal.organizationId, id, sealed, until).pipe(
        audit.recorded(principal, (row) =>
          row === undefined ? undefined : {
            action: "ROTATE_WEBHOOK_SECRET",
            targets: [{ type: "webhook", id, name: row.url }],
            details: { previous_secret_expires_at: until.toISOString() }
          })
      )
      if (row === undefined) return yield* NotFound.of("Webhook", id)
      return new CreatedWebhook({ ...toWebhook(row), secret })
    })

    /** The endpoint, enabled, held (shared) until the caller's transaction ends: a disable waits for it. */
    const enabledOne = (principal: Principal, id: WebhookId) =>
      Effect.gen(function*() {
        const row = yield* find(principal, id, "share")
        if (!row.enabled) {
          return yield* Conflict.of(
            `The webhook is disabled (${row.disabled_reason ?? "manual"}): enable it first (PATCH {"enabled": true}).`,
            "webhook_disabled"
          )
        }
        return row
      })

    const deliveryOf = (webhookId: WebhookId, id: DeliveryId) =>
      Effect.flatMap(
        outbox.delivery(webhookId, id),
        (row) => row === undefined ? Effect.fail(NotFound.of("Delivery", id)) : Effect.succeed(toDelivery(row))
      )

    /** A `webhook.ping` delivery, sent now; answered after its first attempt. */
    const ping = Effect.fn("Webhooks.ping")(function*(principal: Principal, id: WebhookId) {
      yield* requireOrganizationKey(principal, Policy.pingWebhooks)
      const deliveryId = newDeliveryId()
      const body = JSON.stringify({
        id: deliveryId,
        type: "webhook.ping",
        at: formatTimestamp(new Date()),
        organization_id: principal.organizationId,
        data: { webhook_id: id }
      })
      const held = yield* transaction(
        enabledOne(principal, id).pipe(
          Effect.zipRight(outbox.insertPing(id, deliveryId, body, dispatcher.owner, dispatcher.leaseSeconds))
        )
      )
      if (held === undefined) return yield* NotFound.of("Webhook", id)
      yield* dispatcher.sendNow(held)
      return yield* deliveryOf(id, deliveryId)
    })

    /** Sends a delivery again now, under its `webhook-id`; answered after the attempt. */
    const retry = Effect.fn("Webhooks.retry")(function*(principal: Principal, id: WebhookId, deliveryId: DeliveryId) {
      yield* requireOrganizationKey(principal, Policy.retryWebhookDeliveries)
      const held = yield* transaction(
        enabledOne(principal, id).pipe(
          Effect.zipRight(outbox.retryNow(id, deliveryId, dispatcher.owner, dispatcher.leaseSeconds))
        )
      )
      if (held === undefined) return yield* NotFound.of("Delivery", deliveryId)
      yield* dispatcher.sendNow(held)
      return yield* deliveryOf(id, deliveryId)
    })

    const deliveries = Effect.fn("Webhooks.deliveries")(function*(
      principal: Principal,
      id: WebhookId,
      params: {
        readonly status?: string | undefined
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
      }
    ) {
      yield* requireOrganizationKey(principal, Policy.readWebhookDeliveries)
      yield* find(principal, id)
      const after = yield* positionOf(params.cursor, Schema.is(DeliveryId))
      const limit = params.limit ?? 50
      const rows = yield* outbox.deliveries(id, { status: params.status, after, limit })
      return pageOf(rows, limit, (r) => r.created_at, toDelivery)
    })

    return { create, list, get, update, remove, rotate, ping, retry, deliveries } as const
  }),
  dependencies: [
    WebhookRepo.Default,
    DeliveryRepo.Default,
    AuditLog.Default,
    EventLog.Default,
    Egress.Default,
    CredentialVault.Default
  ]
}) {}
