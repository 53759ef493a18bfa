import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import type { UserId } from "../../schema/Ids.js"
import { Principal } from "../../schema/Security.js"
import { OAuthLive } from "../oauth/OAuthLive.js"
import { OAuthRepo } from "../oauth/OAuthRepo.js"
import { TokenVerifier } from "../oauth/TokenVerifier.js"
import { ApiKeyAuthenticator } from "./ApiKeyAuthenticator.js"
import { Identity } from "./Identity.js"

export const IdentityHttpLive = HttpApiBuilder.group(Api, "identity", (handlers) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const authenticator = yield* ApiKeyAuthenticator
    const verifier = yield* TokenVerifier
    const oauth = yield* OAuthRepo
    // their keys and their MCP clients' tokens: both are cached with the member's role
    const forgetKeysOf = (p: Principal, userId: UserId) =>
      Effect.zipRight(
        Effect.flatMap(identity.personalKeyIds(p, userId), (ids) => Effect.forEach(ids, authenticator.forget)),
        Effect.flatMap(
          oauth.listGrants(p.organizationId, userId),
          (grants) => Effect.forEach(grants, (g) => verifier.forgetGrant(g.id))
        )
      )
    return handlers
      .handle("me", () => Effect.flatMap(Principal, identity.me))
      .handle("listMembers", ({ urlParams }) => Effect.flatMap(Principal, (p) => identity.listMembers(p, urlParams)))
      .handle("createMember", ({ payload }) => Effect.flatMap(Principal, (p) => identity.createMember(p, payload)))
      .handle("updateMember", ({ path, payload }) =>
        Effect.flatMap(Principal, (p) =>
          identity.updateMember(p, path.user_id, payload).pipe(
            // their keys, and the organization keys lowered with them, carry the new role at once on this
            // node (within the key cache TTL on others)
            Effect.tap(({ lowered }) =>
              Effect.zipRight(forgetKeysOf(p, path.user_id), Effect.forEach(lowered, authenticator.forget))
            ),
            Effect.map(({ member }) =>
              member
            )
          )))
      .handle("removeMember", ({ path }) =>
        Effect.flatMap(Principal, (p) =>
          identity.removeMember(p, path.user_id).pipe(
            Effect.tap(({ grants, keys }) =>
              Effect.zipRight(
                Effect.forEach(keys, authenticator.forget),
                Effect.forEach(grants, verifier.forgetGrant)
              )
            ),
            Effect.asVoid
          )))
      .handle("listApiKeys", ({ urlParams }) => Effect.flatMap(Principal, (p) => identity.listApiKeys(p, urlParams)))
      .handle("createApiKey", ({ payload }) => Effect.flatMap(Principal, (p) => identity.createApiKey(p, payload)))
      .handle("revokeApiKey", ({ path }) =>
        Effect.flatMap(Principal, (p) =>
          identity.revokeApiKey(p, path.key_id)).pipe(Effect.tap(() =>
            authenticator.forget(path.key_id)
          )))
  })).pipe(Layer.provide([Identity.Default, ApiKeyAuthenticator.Default, OAuthLive]))
