import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import { roleDisplayName } from "../../schema/Identity.js"
import type { UserId } from "../../schema/Ids.js"
import { OAuthAuthorization, type OAuthGrantId } from "../../schema/OAuth.js"
import { holds, Policy } from "../../schema/Policy.js"
import { Principal } from "../../schema/Security.js"
import { requireRoleAtLeast } from "../access/RolePolicy.js"
import { AuditLog } from "../audit/AuditLog.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { IdentityRepo } from "../identity/IdentityRepo.js"
import { OAuthLive } from "./OAuthLive.js"
import { type GrantRow, OAuthRepo } from "./OAuthRepo.js"
import { TokenVerifier } from "./TokenVerifier.js"

const toAuthorization = (row: GrantRow) =>
  new OAuthAuthorization({
    id: row.id as OAuthGrantId,
    user_id: row.user_id,
    client_id: row.client_id,
    client_name: row.client_name,
    resource: row.resource,
    scopes: row.scope.split(" "),
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at
  })

/**
 * MCP authorizations: the clients a person approved, in the key's organization. Their own, with a personal key;
 * another member's for Admins and above, as every member's API keys are (never of a member above their role, with
 * a key of the whole organization).
 */
export const OAuthHttpLive = HttpApiBuilder.group(Api, "oauth", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const identity = yield* IdentityRepo
    const verifier = yield* TokenVerifier
    const audit = yield* AuditLog
    /** Whose authorizations a request is about: `userId` when given (Admin+), else the caller's own. */
    const whose = (p: Principal, userId: UserId | undefined) =>
      Effect.gen(function*() {
        if (userId === undefined || userId === p.userId) {
          if (p.userId === null) {
            return yield* BadRequest.of(
              "Authorizations belong to a person: use a personal API key, or give `user_id` (Admin+).",
              undefined,
              "personal_key_required"
            )
          }
          return p.userId
        }
        yield* requireOrganizationKey(p, Policy.manageEveryAuthorization)
        const member = yield* identity.findMember(p.organizationId, userId)
        if (member === undefined) return yield* NotFound.of("Member", userId)
        yield* requireRoleAtLeast(
          p,
          member.role,
          `You cannot manage the authorizations of a ${roleDisplayName[member.role]}, which is above your own role.`
        )
        return userId
      })
    return handlers
      .handle("listAuthorizations", ({ urlParams }) =>
        Effect.gen(function*() {
          const p = yield* Principal
          const userId = yield* whose(p, urlParams.user_id)
          const items = (yield* repo.listGrants(p.organizationId, userId)).map(toAuthorization)
          return { items, total: items.length }
        }))
      .handle("revokeAuthorization", ({ path }) =>
        Effect.gen(function*() {
          const p = yield* Principal
          const grant = yield* repo.findGrant(path.authorization_id)
          if (grant === undefined || grant.organization_id !== p.organizationId) {
            return yield* NotFound.of("Authorization", path.authorization_id)
          }
          // someone else's: as listing theirs (an authorization a Member cannot see is not found for them)
          if (grant.user_id !== p.userId) {
            if (!holds(p.role, Policy.manageEveryAuthorization)) {
              return yield* NotFound.of("Authorization", path.authorization_id)
            }
            yield* whose(p, grant.user_id)
          }
          // revoking a revoked one changes nothing and records nothing, as for API keys
          yield* repo.revokeGrant(grant.id).pipe(audit.recorded(p, () =>
            grant.revoked_at !== null ? undefined : {
              action: "REVOKE_AUTHORIZATION",
              targets: [{
                type: "oauth_authorization",
                id: grant.id,
                ...(grant.client_name === null ? {} : { name: grant.client_name })
              }],
              details: { user_id: grant.user_id, client_id: grant.client_id }
            }))
          // after the commit, so a token checked meanwhile cannot cache the grant as live again
          yield* verifier.forgetGrant(grant.id)
          return toAuthorization((yield* repo.findGrant(grant.id))!)
        }))
  })).pipe(Layer.provide([OAuthLive, IdentityRepo.Default, AuditLog.Default]))
