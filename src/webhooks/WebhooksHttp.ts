import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { Webhooks } from "./Webhooks.js"
import { WebhooksLive } from "./WebhooksLive.js"

export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)
    return handlers
      .handle("listWebhooks", ({ urlParams }) => as((p) => webhooks.list(p, urlParams)))
      .handle("createWebhook", ({ payload }) => as((p) => webhooks.create(p, payload)))
      .handle("getWebhook", ({ path }) => as((p) => webhooks.get(p, path.webhook_id)))
      .handle("updateWebhook", ({ path, payload }) => as((p) => webhooks.update(p, path.webhook_id, payload)))
      .handle("deleteWebhook", ({ path }) => as((p) => webhooks.remove(p, path.webhook_id)))
      .handle("rotateWebhookSecret", ({ path }) => as((p) => webhooks.rotate(p, path.webhook_id)))
      .handle("listWebhookDeliveries", ({ path, urlParams }) =>
        as((p) => webhooks.deliveries(p, path.webhook_id, urlParams)))
      .handle("retryWebhookDelivery", ({ path }) =>
        as((p) => webhooks.retry(p, path.webhook_id, path.delivery_id)))
      .handle("pingWebhook", ({ path }) => as((p) => webhooks.ping(p, path.webhook_id)))
  })).pipe(Layer.provide(WebhooksLive))
