import { Effect, Redacted } from "effect"
import * as Crypto from "node:crypto"
import type { Principal } from "../../schema/Security.js"
import { SecretKey } from "../config/SecretKey.js"

const PREFIX = "syc_"
const AUDIENCE = "switchyard-rest"
const LIFETIME_MS = 60_000

/** A caller token, as opposed to an API key (`sy_…`): tells the authenticator which check applies. */
export const isCallerToken = (text: string) => text.startsWith(PREFIX)

/**
 * Credentials with which Switchyard calls its own REST API as someone (the built-in Switchyard connector):
 * that caller's principal, signed with HMAC-SHA-256 under a key derived from SWITCHYARD_SECRET_KEY (so any
 * node sharing the key accepts it), for the REST `x-api-key` header only, valid for 60 s. A token grants
 * exactly what its principal already had: nothing is looked up or widened on the way. It is minted per
 * call, sent only to this node's own listener, and never stored or shown.
 */
export class CallerTokens extends Effect.Service<CallerTokens>()("identity/CallerTokens", {
  effect: Effect.gen(function*() {
    const key = Buffer.from(
      Crypto.hkdfSync("sha256", Redacted.value(yield* SecretKey), Buffer.alloc(0), "switchyard caller token v1", 32)
    )
    const sign = (payload: string) => Crypto.createHmac("sha256", key).update(payload).digest()

    const mint = (principal: Principal, now = Date.now()): Redacted.Redacted<string> => {
      const claims = {
        aud: AUDIENCE,
        exp: now + LIFETIME_MS,
        p: {
          organizationId: principal.organizationId,
          userId: principal.userId,
          keyId: principal.keyId,
          role: principal.role,
          agentIds: principal.agentIds
        }
      }
      const payload = Buffer.from(JSON.stringify(claims)).toString("base64url")
      return Redacted.make(`${PREFIX}${payload}.${sign(payload).toString("base64url")}`)
    }

    /** The principal a token was minted for, when it is ours, unexpired and meant for REST; else undefined. */
    const verify = (token: string, now = Date.now()): Principal | undefined => {
      if (!isCallerToken(token)) return undefined
      const [payload, mac, ...rest] = token.slice(PREFIX.length).split(".")
      if (payload === undefined || mac === undefined || rest.length > 0) return undefined
      const expected = sign(payload)
      const given = Buffer.from(mac, "base64url")
      if (given.length !== expected.length || !Crypto.timingSafeEqual(given, expected)) return undefined
      try {
        const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
        return claims?.aud === AUDIENCE && typeof claims.exp === "number" && claims.exp > now
          ? claims.p as Principal
          : undefined
      } catch {
        return undefined
      }
    }

    return { mint, verify } as const
  })
}) {}
