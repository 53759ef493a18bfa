import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { JSONSchema, Schema } from "effect"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire, UnprocessableWire } from "./Errors.js"
import { eventTypes } from "./Events.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"
import {
  CreatedWebhook,
  CreateWebhook,
  DeliveriesParams,
  DeliveryId,
  DeliveryPage,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookEnvelope,
  WebhookId,
  WebhookList,
  WebhookListParams,
  WebhookPingEvent
} from "./Webhooks.js"

const WebhookPath = Schema.Struct({ webhook_id: WebhookId })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("listWebhooks", "/webhooks")
      .annotateContext(
        operation({ summary: "List webhook endpoints", permission: Policy.readWebhooks, errors: ["invalid_cursor"] })
      )
      .setUrlParams(WebhookListParams)
      .addSuccess(WebhookList)
      .annotate(OpenApi.Description, "The organization's webhook endpoints.")
  )
  .add(
    HttpApiEndpoint.post("createWebhook", "/webhooks")
      .annotateContext(
        operation({
          summary: "Create a webhook endpoint",
          permission: Policy.createWebhooks,
          errors: ["webhook_url_not_allowed", "webhook_limit_reached"]
        })
      )
      .setPayload(CreateWebhook)
      .addSuccess(CreatedWebhook, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Create a webhook endpoint: the events committed from now on (of `event_types`, or all) are " +
          "POSTed to `url`, signed as Standard Webhooks says. The signing secret is in `secret`, shown once. " +
          "422 `webhook_url_not_allowed`: the URL resolves to an internal address. 409 `webhook_limit_reached`: " +
          "the organization has as many endpoints as SWITCHYARD_WEBHOOK_MAX_ENDPOINTS allows (50 by default)."
      )
  )
  .add(
    HttpApiEndpoint.get("getWebhook", "/webhooks/:webhook_id")
      .annotateContext(operation({ summary: "Get a webhook endpoint", permission: Policy.readWebhooks, errors: [] }))
      .setPath(WebhookPath)
      .addSuccess(Webhook)
      .annotate(OpenApi.Description, "A webhook endpoint; its secret is never shown again.")
  )
  .add(
    HttpApiEndpoint.patch("updateWebhook", "/webhooks/:webhook_id")
      .annotateContext(
        operation({
          summary: "Change a webhook endpoint",
          permission: Policy.changeWebhooks,
          errors: ["webhook_url_not_allowed"]
        })
      )
      .setPath(WebhookPath)
      .setPayload(UpdateWebhook)
      .addSuccess(Webhook)
      .annotate(
        OpenApi.Description,
        "Change a webhook endpoint. `enabled: true` on a disabled one delivers the events committed from then " +
          "on: what happened while it was disabled is not sent. Disabling it cancels its pending deliveries " +
          "(`cancelled`; `POST …/retry` sends one again). " +
          "A change that changes nothing (`{}`) answers the endpoint as it is, without writing it."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteWebhook", "/webhooks/:webhook_id")
      .annotateContext(
        operation({ summary: "Delete a webhook endpoint", permission: Policy.deleteWebhooks, errors: [] })
      )
      .setPath(WebhookPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a webhook endpoint and its deliveries.")
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookSecret", "/webhooks/:webhook_id/rotate-secret")
      .annotateContext(
        operation({ summary: "Rotate a webhook's signing secret", permission: Policy.rotateWebhookSecrets, errors: [] })
      )
      .setPath(WebhookPath)
      .addSuccess(CreatedWebhook)
      .annotate(
        OpenApi.Description,
        "A new signing secret, in `secret`, shown once. For 24 hours deliveries carry a signature by " +
          "the previous secret as well (`previous_secret_expires_at`), so receivers can switch at their pace."
      )
  )
  .add(
    HttpApiEndpoint.get("listWebhookDeliveries", "/webhooks/:webhook_id/deliveries")
      .annotateContext(
        operation({
          summary: "List a webhook's deliveries",
          permission: Policy.readWebhookDeliveries,
          errors: ["invalid_cursor"]
        })
      )
      .setPath(WebhookPath)
      .setUrlParams(DeliveriesParams)
      .addSuccess(DeliveryPage)
      .annotate(
        OpenApi.Description,
        "The endpoint's deliveries, newest first: each with its attempts (status, latency, the answer's " +
          "first 1024 characters) and, while pending, its next attempt. Kept as long as events are."
      )
  )
  .add(
    HttpApiEndpoint.post("retryWebhookDelivery", "/webhooks/:webhook_id/deliveries/:delivery_id/retry")
      .annotateContext(
        operation({
          summary: "Send a delivery again",
          permission: Policy.retryWebhookDeliveries,
          errors: ["webhook_disabled"]
        })
      )
      .setPath(Schema.Struct({ webhook_id: WebhookId, delivery_id: DeliveryId }))
      .addSuccess(WebhookDelivery)
      .annotate(
        OpenApi.Description,
        "Send a delivery again now, under its `webhook-id`; answered after the attempt. 409 " +
          "`webhook_disabled` while the endpoint is disabled."
      )
  )
  .add(
    HttpApiEndpoint.post("pingWebhook", "/webhooks/:webhook_id/ping")
      .annotateContext(
        operation({ summary: "Send a test event", permission: Policy.pingWebhooks, errors: ["webhook_disabled"] })
      )
      .setPath(WebhookPath)
      .addSuccess(WebhookDelivery)
      .annotate(
        OpenApi.Description,
        "Send a test event, `webhook.ping`; answered after its first attempt, with its result. 409 " +
          "`webhook_disabled` while the endpoint is disabled."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .addError(UnprocessableWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Webhooks")
  .annotate(
    OpenApi.Description,
    "Endpoints that receive the organization's events as signed POSTs (docs/guides/webhooks.md); the bodies are in `webhooks`."
  )
{}

/**
 * The OpenAPI 3.1 `webhooks` section: one entry per event type, the POST a receiver gets, its body the
 * event's schema (`Event_*`, added by `documentEvents`) with the envelope's `organization_id`, and the
 * Standard Webhooks headers.
 */
export const documentWebhooks = (spec: Record<string, any>) => {
  const definitions: Record<string, any> = {}
  for (const schema of [WebhookEnvelope, WebhookPingEvent]) {
    JSONSchema.fromAST(schema.ast, { definitions, definitionPath: "#/components/schemas/" })
  }
  spec.components ??= {}
  spec.components.schemas = { ...spec.components.schemas, ...definitions }
  const header = (name: string, description: string) => ({
    name,
    in: "header",
    required: true,
    description,
    schema: { type: "string" }
  })
  const parameters = [
    header("webhook-id", "The delivery's id (`msg_…`), the same on every attempt: deduplicate by it."),
    header("webhook-timestamp", "When this attempt was signed, in seconds since the Unix epoch."),
    header(
      "webhook-signature",
      "`v1,<base64 HMAC-SHA256 of \"{webhook-id}.{webhook-timestamp}.{body}\">`, keyed with the secret's bytes; " +
        "several, separated by spaces, for 24 hours after a rotation."
    )
  ]
  const operation = (type: string, schema: Record<string, unknown>) => ({
    post: {
      summary: type,
      description: `Sent to endpoints whose \`event_types\` include ${type} (or are empty). Answer 2xx within 15 s ` +
        "to acknowledge; anything else is retried on the schedule, and 410 disables the endpoint. See " +
        "docs/guides/webhooks.md.",
      parameters,
      requestBody: { required: true, content: { "application/json": { schema } } },
      responses: { "2XX": { description: "Received." }, "410": { description: "Disables the endpoint." } }
    }
  })
  spec.webhooks = {
    ...spec.webhooks,
    ...Object.fromEntries(eventTypes.map((type) => [
      type,
      operation(type, {
        allOf: [
          { $ref: `#/components/schemas/Event_${type.replace(/\./g, "_")}` },
          { $ref: "#/components/schemas/WebhookEnvelope" }
        ]
      })
    ])),
    "webhook.ping": operation("webhook.ping", { $ref: "#/components/schemas/Event_webhook_ping" })
  }
  return spec
}
