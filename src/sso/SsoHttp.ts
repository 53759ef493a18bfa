import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { OAuthLive } from "../oauth/OAuthLive.js"
import { TokenVerifier } from "../oauth/TokenVerifier.js"
import { SingleSignOn } from "./SingleSignOn.js"

export const SsoHttpLive = HttpApiBuilder.group(Api, "sso", (handlers) =>
  Effect.gen(function*() {
    const sso = yield* SingleSignOn
    const verifier = yield* TokenVerifier
    // after the commit, so a token checked meanwhile cannot cache its grant as live again
    const forget = (ended: { readonly revokedGrants: ReadonlyArray<string> }) =>
      Effect.forEach(ended.revokedGrants, verifier.forgetGrant, { discard: true })
    return handlers
      .handle("getSso", () => Effect.flatMap(Principal, (p) => sso.get(p)))
      .handle("putSso", ({ payload }) =>
        Effect.flatMap(Principal, (p) =>
          sso.put(p, payload).pipe(
            Effect.tap(forget),
            Effect.map((put) => put.settings)
          )))
      .handle(
        "deleteSso",
        () => Effect.flatMap(Principal, (p) => sso.remove(p).pipe(Effect.tap(forget), Effect.asVoid))
      )
  })).pipe(Layer.provide([SingleSignOn.Default, OAuthLive]))
