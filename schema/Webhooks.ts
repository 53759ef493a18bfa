import { Schema } from "effect"
import { EventId, EventType } from "./Events.js"
import { idMessage, OrganizationId, uuidId } from "./Ids.js"
import { IntegerParam, optionalPage, PagedList } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

/**
 * Webhooks (issue 22): endpoints that receive the event log's events by HTTP POST, signed as the Standard
 * Webhooks specification says (docs/guides/webhooks.md). The event bodies are `Event` of ./Events.ts with
 * the organization's id added; `webhook.ping` is the test event.
 */

export const WebhookId = uuidId("WebhookId", "a webhook endpoint", "Identifier of a webhook endpoint (UUID).")
export type WebhookId = typeof WebhookId.Type

export const DeliveryId = Schema.String.pipe(
  Schema.pattern(/^msg_[0-9a-f]{32}$/),
  Schema.brand("DeliveryId"),
  Schema.annotations({
    description: "Identifier of a delivery: `msg_` and 32 hex digits. It is sent as `webhook-id`, the same on every " +
      "attempt: receivers deduplicate by it.",
    message: idMessage("a delivery (`msg_` and 32 hex digits)")
  })
)
export type DeliveryId = typeof DeliveryId.Type

export const WebhookUrl = Schema.String.pipe(
  Schema.minLength(1),
  Schema.maxLength(2048),
  Schema.filter((s) => {
    if (s.trim() !== s) return "must not begin or end with spaces"
    if (!URL.canParse(s)) return "must be an absolute http(s) URL"
    // `http:///x` parses (as http://x/): a host must follow the scheme as written, so that what is stored is what is sent to
    if (!/^https?:\/\/[^/?#\\]/i.test(s)) return "must be an absolute http(s) URL with a host (https://host/path)"
    const url = new URL(s)
    if (url.protocol !== "https:" && url.protocol !== "http:") return "must be an http(s) URL"
    if (url.username !== "" || url.password !== "") return "must not carry a user name or password"
    if (url.hash !== "") return "must not carry a fragment (#…)"
    return true
  })
).annotations({
  // generated values (tests, the fuzz) are URLs: filtering random strings for one would rarely end
  arbitrary: () => (fc) => fc.oneof(fc.webUrl({ withQueryParameters: true }), fc.constant("http://127.0.0.1:9/hook")),
  description: "Where deliveries are POSTed: an absolute http(s) URL (https recommended). Internal addresses " +
    "(loopback, private, link-local, metadata) are refused unless the operator allows them (SWITCHYARD_EGRESS_ALLOW)."
})

// described on the fields: a description on a limit's refinement stands in for its message ("Expected <it>")
export const WebhookEventTypes = Schema.Array(EventType).pipe(Schema.maxItems(50))
const eventTypes = {
  description: "The event types delivered; empty (the default): every type. `audit.recorded` events are whole " +
    "audit records."
}

const description = Schema.String.pipe(Schema.maxLength(500))
const describedAs = { description: "For people: what the endpoint is for." }

export const DisabledReason = Schema.Literal("manual", "gone", "failing").annotations({
  description: "Why the endpoint is disabled: `manual` (`enabled: false`), `gone` (it answered 410), `failing` " +
    "(a delivery failed through the whole retry schedule without a success meanwhile). Enable it again with " +
    "`PATCH {\"enabled\": true}`: it receives the events committed from then on; what was pending when it was " +
    "disabled is `cancelled`."
})

export class Webhook extends Schema.Class<Webhook>("Webhook")({
  id: WebhookId,
  url: Schema.String,
  description: Schema.String,
  event_types: Schema.propertySignature(WebhookEventTypes).annotations(eventTypes),
  enabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(DisabledReason),
  previous_secret_expires_at: Schema.NullOr(Timestamp).annotations({
    description: "After a rotation: until then deliveries are signed with the previous secret as well."
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class CreatedWebhook extends Schema.Class<CreatedWebhook>("CreatedWebhook")({
  ...Webhook.fields,
  secret: Schema.String.annotations({
    description: "The signing secret, `whsec_` and base64: shown once, store it now. Verify deliveries with it " +
      "(any Standard Webhooks library takes it as is)."
  })
}) {}

export const CreateWebhook = Schema.Struct({
  url: WebhookUrl,
  event_types: Schema.optional(WebhookEventTypes).annotations(eventTypes),
  description: Schema.optional(description).annotations(describedAs),
  enabled: Schema.optional(Schema.Boolean).annotations({ description: "Default true." })
}).annotations({ identifier: "CreateWebhook", ...requestBody })
export type CreateWebhook = typeof CreateWebhook.Type

export const UpdateWebhook = Schema.Struct({
  url: Schema.optional(WebhookUrl),
  event_types: Schema.optional(WebhookEventTypes).annotations(eventTypes),
  description: Schema.optional(description).annotations(describedAs),
  enabled: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "UpdateWebhook", ...requestBody })
export type UpdateWebhook = typeof UpdateWebhook.Type

export const WebhookList = PagedList(Webhook, "WebhookList", "endpoints")

export const WebhookListParams = Schema.Struct(optionalPage("Endpoints", "every endpoint"))

export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Int.annotations({ description: "1 for the first attempt." }),
  at: Timestamp,
  status_code: Schema.NullOr(Schema.Int).annotations({ description: "The receiver's HTTP status; null: no answer." }),
  latency_ms: Schema.Number.annotations({ description: "From sending to the answer's end (or the failure)." }),
  response_excerpt: Schema.NullOr(Schema.String).annotations({
    description: "The answer's body, its first 1024 characters."
  }),
  error: Schema.NullOr(Schema.String).annotations({
    description: "Why there was no answer: a timeout, a refused connection, the egress guard."
  })
}).annotations({ identifier: "DeliveryAttempt" })

export const DeliveryStatus = Schema.Literal("pending", "succeeded", "failed", "cancelled").annotations({
  description: "`pending`: not delivered yet (`next_attempt_at` says when it is tried). `succeeded`: a 2xx answer. " +
    "`failed`: the retry schedule ran out, or the endpoint answered 410. `cancelled`: it was pending when the " +
    "endpoint was disabled, and is not tried again by itself (`POST …/retry` sends it)."
})

export const WebhookDelivery = Schema.Struct({
  id: DeliveryId,
  event_id: Schema.NullOr(EventId).annotations({ description: "The event delivered; null for a ping." }),
  event_type: Schema.String,
  status: DeliveryStatus,
  next_attempt_at: Schema.NullOr(Timestamp).annotations({ description: "When it is tried next, while pending." }),
  attempts: Schema.Array(DeliveryAttempt).annotations({ description: "Each attempt, the first first (the last 50)." }),
  created_at: Timestamp,
  delivered_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type

export const DeliveryPage = Schema.Struct({
  items: Schema.Array(WebhookDelivery),
  next_cursor: Schema.NullOr(Schema.String).annotations({ description: "Pass as `cursor` for the next page." })
}).annotations({ identifier: "DeliveryPage" })

export const DeliveriesParams = Schema.Struct({
  status: Schema.optional(DeliveryStatus),
  limit: Schema.optional(IntegerParam(1, 200)).annotations({
    description: "Deliveries per page, 1–200 (default 50), newest first."
  }),
  cursor: Schema.optional(Schema.String)
})

/** What every delivery's body has besides the event's own fields. */
export const WebhookEnvelope = Schema.Struct({
  organization_id: OrganizationId.annotations({ description: "The organization whose event it is." })
}).annotations({ identifier: "WebhookEnvelope" })

export const WebhookPingEvent = Schema.Struct({
  id: DeliveryId.annotations({ description: "The ping's delivery id (pings are not in the event log)." }),
  type: Schema.Literal("webhook.ping"),
  at: Timestamp,
  organization_id: OrganizationId,
  data: Schema.Struct({ webhook_id: WebhookId })
}).annotations({
  identifier: "Event_webhook_ping",
  description: "A test delivery: POST /v1/webhooks/{id}/ping."
})
