import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "@effect/platform"
import { Context, Schema } from "effect"
import { TooManyRequestsWire, UnauthenticatedWire } from "./Errors.js"
import type { Role } from "./Identity.js"
import type { AgentId, ApiKeyId, OrganizationId, UserId } from "./Ids.js"

/** Who is calling: resolved from the `x-api-key` header, scoped to exactly one organization. */
export interface Principal {
  readonly organizationId: OrganizationId
  readonly userId: UserId | null
  readonly keyId: ApiKeyId
  readonly role: Role
  /** `null`: every agent; otherwise the agents an organization key is limited to. */
  readonly agentIds: ReadonlyArray<AgentId> | null
}
export const Principal = Context.GenericTag<Principal>("switchyard/Principal")

export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("switchyard/Authentication", {
  // 429 once a key id or a source address has failed too often (see the README's rate limits)
  failure: Schema.Union(UnauthenticatedWire, TooManyRequestsWire),
  provides: Principal,
  security: {
    apiKey: HttpApiSecurity.apiKey({ in: "header", key: "x-api-key" }).pipe(
      HttpApiSecurity.annotate(
        OpenApi.Description,
        "An API key `sy_<id>_<secret>` (organization or personal). `Authorization: Bearer` is not accepted on REST."
      )
    )
  }
}) {}
