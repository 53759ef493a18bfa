import { HttpServerRequest } from "@effect/platform"
import { Effect, FiberRef, Layer, Redacted } from "effect"
import { Unauthenticated } from "../../schema/Errors.js"
import { Authentication } from "../../schema/Security.js"
import { CurrentAuditRequest } from "../audit/DeniedRequests.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { ConsoleSession } from "../web/ConsoleSession.js"
import { CurrentRequest } from "./RequestContext.js"

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const authenticator = yield* ApiKeyAuthenticator
    const consoleSession = yield* ConsoleSession
    return {
      apiKey: (key) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (Redacted.value(key) === "" && /^\s*bearer\s/i.test(request.headers["authorization"] ?? "")) {
            return yield* Unauthenticated.of(
              "REST calls authenticate with the x-api-key header; Authorization: Bearer is not supported here.",
              "bearer_not_supported"
            )
          }
          const audit = yield* FiberRef.get(CurrentAuditRequest)
          // no key: the web console's session cookie, if any (unsafe methods also need its CSRF header)
          const session = Redacted.value(key) === "" ? yield* consoleSession.authenticate(request) : undefined
          const principal = session ?? (yield* authenticator.authenticate(key).pipe(
            Effect.tapError((e) =>
              audit === undefined || (e._tag === "Unauthenticated" && e.code === "missing_api_key")
                ? Effect.void
                : Effect.map(authenticator.organizationOf(key), (refused) => {
                  audit.refusedKey = refused
                })
            )
          ))
          const info = yield* FiberRef.get(CurrentRequest)
          if (info !== undefined) info.organizationId = principal.organizationId
          if (audit !== undefined) audit.principal = principal
          return principal
        })
    }
  })
).pipe(Layer.provide([ApiKeyAuthenticator.Default, ConsoleSession.Default]))
