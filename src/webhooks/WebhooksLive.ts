import { Layer } from "effect"
import { EventLog } from "../events/EventLog.js"
import { WebhookDispatcher } from "./WebhookDispatcher.js"
import { Webhooks } from "./Webhooks.js"

/** Webhooks: the service the API calls, and this node's dispatcher (fan-out, sending, retries). One per node. */
export const WebhooksLive = Webhooks.Default.pipe(
  Layer.provideMerge(WebhookDispatcher.Default),
  Layer.provide(EventLog.Default)
)
