import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { Principal } from "../../schema/Security.js"
import { SingleSignOn } from "./SingleSignOn.js"

export const SsoHttpLive = HttpApiBuilder.group(Api, "sso", (handlers) =>
  Effect.gen(function*() {
    const sso = yield* SingleSignOn
    return handlers
      .handle("getSso", () => Effect.flatMap(Principal, (p) => sso.get(p)))
      .handle("putSso", ({ payload }) => Effect.flatMap(Principal, (p) => sso.put(p, payload)))
      .handle("deleteSso", () => Effect.flatMap(Principal, (p) => sso.remove(p)))
  })).pipe(Layer.provide(SingleSignOn.Default))
