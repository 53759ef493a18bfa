import { HttpLayerRouter, HttpServerRequest, type HttpServerResponse } from "@effect/platform"
import { Effect, FiberRef, Layer } from "effect"
import type { ApiKeyId, OrganizationId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog } from "./AuditLog.js"

/** What authentication learned about a request, for the record of a refusal. */
export interface AuditRequestState {
  principal: Principal | undefined
  /** A key that names its organization but was refused (wrong secret, revoked, member removed). */
  refusedKey: { readonly organizationId: OrganizationId; readonly keyId: ApiKeyId } | undefined
}

export const CurrentAuditRequest = FiberRef.unsafeMake<AuditRequestState | undefined>(undefined)

const errorOf = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.body._tag !== "Uint8Array") return undefined
  try {
    const error = JSON.parse(new TextDecoder().decode(response.body.body))?.error
    return typeof error?.code === "string" ? { code: error.code as string, message: String(error.message) } : undefined
  } catch {
    return undefined
  }
}

/**
 * Refusals become `denied` audit records, in a transaction of their own (the refused change, if any, was
 * rolled back): every 403 `forbidden` of an authenticated caller, and every 401 of a key whose organization
 * is known. A 401 for an unknown or malformed key names no organization and is not recorded.
 */
export const DeniedRequestsLive = HttpLayerRouter.middleware(
  Effect.gen(function*() {
    const audit = yield* AuditLog
    return (handler: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>) =>
      Effect.gen(function*() {
        const state: AuditRequestState = { principal: undefined, refusedKey: undefined }
        const response = yield* Effect.locally(handler, CurrentAuditRequest, state)
        if (response.status !== 401 && response.status !== 403) return response
        const error = errorOf(response)
        if (error === undefined) return response
        const request = yield* HttpServerRequest.HttpServerRequest
        const route = { type: "route", id: `${request.method} ${request.url.split("?")[0]}` }
        const meta = yield* audit.currentMeta
        const withId = { ...meta, requestId: meta.requestId ?? response.headers["x-request-id"] ?? null }
        if (response.status === 403 && error.code === "forbidden" && state.principal !== undefined) {
          yield* audit.record(state.principal, {
            action: "ACCESS_DENIED",
            targets: [route],
            outcome: "denied",
            details: error
          }, withId).pipe(Effect.ignoreLogged)
        } else if (response.status === 401 && state.refusedKey !== undefined) {
          const { keyId, organizationId } = state.refusedKey
          yield* audit.record({ organizationId, actor: { type: "api_key", id: keyId, key_id: keyId } }, {
            action: "AUTHENTICATION_FAILED",
            targets: [route],
            outcome: "denied",
            details: error
          }, withId).pipe(Effect.ignoreLogged)
        }
        return response
      })
  }),
  { global: true }
).pipe(Layer.provide(AuditLog.Default))
