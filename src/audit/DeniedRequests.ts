import { HttpLayerRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Layer } from "effect"
import type { ApiKeyId, OrganizationId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import type { RefusalRecord } from "../security/RateLimits.js"
import { AuditLog } from "./AuditLog.js"

/** What authentication learned about a request, for the record of a refusal. */
export interface AuditRequestState {
  principal: Principal | undefined
  /** A key that names its organization but was refused (wrong secret, revoked, member removed). */
  refusedKey: { readonly organizationId: OrganizationId; readonly keyId: ApiKeyId } | undefined
  /** Whether and how to record the refused key: the rate limiter keeps to one record per key per window. */
  refusalRecord?: RefusalRecord
}

export const CurrentAuditRequest = FiberRef.unsafeMake<AuditRequestState | undefined>(undefined)

const errorOf = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.body._tag !== "Uint8Array") return undefined
  try {
    const error = JSON.parse(new TextDecoder().decode(response.body.body))?.error
    return typeof error?.code === "string"
      ? { code: error.code as string, message: String(error.message), details: error.details as unknown }
      : undefined
  } catch {
    return undefined
  }
}

/** A 429 of the API says when to come back in its body; clients and proxies read the header. */
const withRetryAfter = (
  response: HttpServerResponse.HttpServerResponse,
  error: ReturnType<typeof errorOf>
) => {
  const seconds = (error?.details as { retry_after_seconds?: unknown } | undefined)?.retry_after_seconds
  return typeof seconds === "number" && response.headers["retry-after"] === undefined
    ? HttpServerResponse.setHeader(response, "retry-after", String(seconds))
    : response
}

/**
 * Refusals become `denied` audit records, in a transaction of their own (the refused change, if any, was
 * rolled back): every 403 `forbidden` of an authenticated caller, and the 401s and 429s of a key whose
 * organization is known, as the rate limiter decides: the first refusal of the key in its window
 * (`AUTHENTICATION_FAILED`) and its first rate-limited attempt (`RATE_LIMITED`), not every attempt. A
 * refusal for an unknown or malformed key names no organization and is not recorded.
 */
export const DeniedRequestsLive = HttpLayerRouter.middleware(
  Effect.gen(function*() {
    const audit = yield* AuditLog
    return (handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
      Effect.gen(function*() {
        const state: AuditRequestState = { principal: undefined, refusedKey: undefined }
        const response = yield* Effect.locally(handler, CurrentAuditRequest, state)
        if (response.status !== 401 && response.status !== 403 && response.status !== 429) return response
        const error = errorOf(response)
        if (error === undefined) return response
        const request = yield* HttpServerRequest.HttpServerRequest
        const route = { type: "route", id: `${request.method} ${request.url.split("?")[0]}` }
        const meta = yield* audit.currentMeta
        const withId = { ...meta, requestId: meta.requestId ?? response.headers["x-request-id"] ?? null }
        const { code, message } = error
        if (response.status === 403 && code === "forbidden" && state.principal !== undefined) {
          yield* audit.record(state.principal, {
            action: "ACCESS_DENIED",
            targets: [route],
            outcome: "denied",
            details: { code, message }
          }, withId).pipe(Effect.ignoreLogged)
        } else if (response.status !== 403 && state.refusedKey !== undefined) {
          const { keyId, organizationId } = state.refusedKey
          // undefined: the key's limit is off, and each 401 is recorded
          const record = state.refusalRecord === undefined && response.status === 401
            ? { action: "AUTHENTICATION_FAILED", details: {} }
            : state.refusalRecord
          if (record !== undefined && record !== null) {
            yield* audit.record({ organizationId, actor: { type: "api_key", id: keyId, key_id: keyId } }, {
              action: record.action,
              targets: [route],
              outcome: "denied",
              details: { code, message, ...record.details }
            }, withId).pipe(Effect.ignoreLogged)
          }
        }
        return response.status === 429 ? withRetryAfter(response, error) : response
      })
  }),
  { global: true }
).pipe(Layer.provide(AuditLog.Default))
