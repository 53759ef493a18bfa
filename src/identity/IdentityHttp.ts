import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import type { UserId } from "../../schema/Ids.js"
import { Principal } from "../../schema/Security.js"
import { orDieOnSql } from "../http/orDieOnSql.js"
import { ApiKeyAuthenticator } from "./ApiKeyAuthenticator.js"
import { Identity } from "./Identity.js"

export const IdentityHttpLive = HttpApiBuilder.group(Api, "identity", (handlers) =>
  Effect.gen(function*() {
    const identity = yield* Identity
    const authenticator = yield* ApiKeyAuthenticator
    const forgetKeysOf = (p: Principal, userId: UserId) =>
      Effect.flatMap(identity.personalKeyIds(p, userId), (ids) => Effect.forEach(ids, authenticator.forget))
    return handlers
      .handle("me", () => Effect.flatMap(Principal, identity.me).pipe(orDieOnSql))
      .handle("listMembers", () => Effect.flatMap(Principal, identity.listMembers).pipe(orDieOnSql))
      .handle("createMember", ({ payload }) =>
        Effect.flatMap(Principal, (p) => identity.createMember(p, payload)).pipe(orDieOnSql))
      .handle("updateMember", ({ path, payload }) =>
        Effect.flatMap(Principal, (p) =>
          identity.updateMember(p, path.user_id, payload).pipe(
            // their keys carry the new role at once on this node (within the key cache TTL on others)
            Effect.tap(() =>
              forgetKeysOf(p, path.user_id)
            )
          )).pipe(orDieOnSql))
      .handle("removeMember", ({ path }) =>
        Effect.flatMap(Principal, (p) =>
          identity.removeMember(p, path.user_id).pipe(
            Effect.tap((revoked) =>
              Effect.forEach(revoked, authenticator.forget)
            ),
            Effect.asVoid
          )).pipe(orDieOnSql))
      .handle("listApiKeys", () => Effect.flatMap(Principal, identity.listApiKeys).pipe(orDieOnSql))
      .handle("createApiKey", ({ payload }) =>
        Effect.flatMap(Principal, (p) =>
          identity.createApiKey(p, payload)).pipe(orDieOnSql))
      .handle("revokeApiKey", ({ path }) =>
        Effect.flatMap(Principal, (p) =>
          identity.revokeApiKey(p, path.key_id)).pipe(
            Effect.tap(() => authenticator.forget(path.key_id)),
            orDieOnSql
          ))
  })).pipe(Layer.provide([Identity.Default, ApiKeyAuthenticator.Default]))
