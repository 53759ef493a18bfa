import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import { OAuthAuthorization, type OAuthGrantId } from "../../schema/OAuth.js"
import { Principal } from "../../schema/Security.js"
import { AuthorizationServer } from "./AuthorizationServer.js"
import { OAuthLive } from "./OAuthLive.js"
import { type GrantRow, OAuthRepo } from "./OAuthRepo.js"

const toAuthorization = (row: GrantRow) =>
  new OAuthAuthorization({
    id: row.id as OAuthGrantId,
    client_id: row.client_id,
    client_name: row.client_name,
    resource: row.resource,
    scopes: row.scope.split(" "),
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at
  })

/** A person's MCP authorizations: the clients they approved, in the key's organization. */
export const OAuthHttpLive = HttpApiBuilder.group(Api, "oauth", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const server = yield* AuthorizationServer
    const userOf = Effect.flatMap(Principal, (p) =>
      p.userId === null
        ? Effect.fail(BadRequest.of(
          "Authorizations belong to a person: use a personal API key.",
          undefined,
          "personal_key_required"
        ))
        : Effect.succeed({ organizationId: p.organizationId, userId: p.userId }))
    return handlers
      .handle("listAuthorizations", () =>
        Effect.gen(function*() {
          const { organizationId, userId } = yield* userOf
          const items = (yield* repo.listGrants(organizationId, userId)).map(toAuthorization)
          return { items, total: items.length }
        }))
      .handle("revokeAuthorization", ({ path }) =>
        Effect.gen(function*() {
          const { organizationId, userId } = yield* userOf
          const grant = yield* repo.findGrant(path.authorization_id)
          if (grant === undefined || grant.organization_id !== organizationId || grant.user_id !== userId) {
            return yield* NotFound.of("Authorization", path.authorization_id)
          }
          yield* server.revokeFamily(grant.id)
          return toAuthorization((yield* repo.findGrant(grant.id))!)
        }))
  })).pipe(Layer.provide(OAuthLive))
