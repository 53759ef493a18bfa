import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { DeliveryId, WebhookId } from "../../schema/Webhooks.js"
import { AuditLog } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { WebhookRepo } from "./WebhookRepo.js"

const SYSTEM = { type: "system", id: "webhooks", key_id: null } as const
const NO_REQUEST = { ip: null, userAgent: null, requestId: null }

/**
 * Disables an endpoint on the delivery side's word (it answered 410, or it failed past the retry schedule),
 * with its audit record (`DISABLE_WEBHOOK`, by the system) and its pending deliveries cancelled in the same
 * transaction. Once: an endpoint
 * disabled already is left alone, by whichever node saw it first.
 */
export class WebhookDisabler extends Effect.Service<WebhookDisabler>()("webhooks/WebhookDisabler", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* WebhookRepo
    const audit = yield* AuditLog
    const transaction = transactionIn(sql)

    const disable = Effect.fn("WebhookDisabler.disable")(
      function*(id: WebhookId, reason: "gone" | "failing", deliveryId: DeliveryId) {
        yield* transaction(Effect.gen(function*() {
          const row = yield* repo.disable(id, reason)
          if (row === undefined) return
          yield* repo.cancelPending(id)
          yield* audit.record({ organizationId: row.organization_id, actor: SYSTEM }, {
            action: "DISABLE_WEBHOOK",
            targets: [{ type: "webhook", id, name: row.url }],
            details: {
              reason,
              delivery_id: deliveryId,
              why: reason === "gone"
                ? "the endpoint answered 410 Gone"
                : "a delivery failed through the whole retry schedule, with no success of the endpoint meanwhile"
            }
          }, NO_REQUEST)
        }))
        yield* Effect.logWarning(`webhook ${id} disabled (${reason})`)
      }
    )
    return { disable } as const
  }),
  dependencies: [WebhookRepo.Default, AuditLog.Default]
}) {}
