import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import { TooManyRequests } from "../../schema/Errors.js"
import type { ApiKeyId } from "../../schema/Ids.js"
import { AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { isFirstRefusal, isOver, type RateLimit, RateLimiter, type Subject, type Tally } from "./RateLimiter.js"

/** An attempt refused for a limit: what to tell the caller, and whether it is the first refusal of the window. */
export interface Refusal {
  readonly message: string
  readonly retryAfter: number
  readonly firstOfWindow: boolean
  readonly tally: Tally
}

/** What the audit log makes of a refused API key: one record per window, not one per attempt. */
export type RefusalRecord =
  | { readonly action: "AUTHENTICATION_FAILED" | "RATE_LIMITED"; readonly details: Record<string, unknown> }
  | null

const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
const spell = (seconds: number) =>
  seconds < 60 || (seconds < 120 && seconds % 60 !== 0)
    ? unit(seconds, "second")
    : seconds % 3600 === 0
    ? unit(seconds / 3600, "hour")
    : unit(Math.ceil(seconds / 60), "minute")

const windowSeconds = (limit: RateLimit) => Math.round(Duration.toSeconds(limit.window))

/** An e-mail address is counted by its hash: the table holds no address, and no attacker-sized key. */
const accountOf = (email: string) =>
  Crypto.createHash("sha256").update(email.trim().toLowerCase()).digest("hex").slice(0, 32)

// the address a request came from, as the audit log records it (SWITCHYARD_TRUST_PROXY applies)
const sourceOf = (ip: string | null) => (ip === null || ip === "" ? undefined : ip.slice(0, 100))

/**
 * The limits Switchyard applies, by what they protect (defaults in SwitchyardConfig, reasons in the README):
 * sign-in attempts per account and per source address, failed API key attempts per key id and per source
 * address, and client registrations per source address.
 */
export class RateLimits extends Effect.Service<RateLimits>()("security/RateLimits", {
  effect: Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const audit = yield* AuditLog
    const settings = (yield* SwitchyardConfig).rateLimits
    const limits = {
      passwordAccount: { name: "password_account", ...settings.passwordPerAccount },
      passwordIp: { name: "password_ip", ...settings.passwordPerIp },
      apiKey: { name: "api_key", ...settings.apiKey },
      apiKeyIp: { name: "api_key_ip", ...settings.apiKeyPerIp },
      registrationIp: { name: "registration_ip", ...settings.registrationPerIp },
      ssoStartIp: { name: "sso_start_ip", ...settings.ssoStartPerIp },
      clientSecret: { name: "client_secret", ...settings.clientSecret }
    } satisfies Record<string, RateLimit>

    const source = Effect.map(audit.currentMeta, (meta) => sourceOf(meta.ip))

    const messageOf = (t: Tally) => {
      const wait = `Try again in ${spell(t.retryAfter)}`
      const rule = `(at most ${t.limit.max} in ${spell(windowSeconds(t.limit))})`
      switch (t.limit.name) {
        case "api_key":
          return `Too many failed attempts with the API key sy_${t.subject}_… ${rule}. ${wait}, and check that ` +
            "you send the whole key and that it was not revoked."
        case "api_key_ip":
          return `Too many failed API key attempts from your address ${rule}. ${wait}.`
        case "password_account":
          return `Too many sign-in attempts for this e-mail address. ${wait}.`
        case "password_ip":
          return `Too many failed sign-ins from your address. ${wait}.`
        case "client_secret":
          return `Too many failed authentications of the OAuth client ${t.subject} ${rule}. ${wait}, and check ` +
            "its client secret."
        case "sso_start_ip":
          return `Too many single sign-on starts from your address ${rule}. ${wait}.`
        default:
          return `Too many client registrations from your address ${rule}. ${wait}, or reuse a registered client.`
      }
    }

    // a refusal this node remembers was not counted again: it is never the window's first
    const refusalOf = (t: Tally, counted: boolean): Refusal => ({
      message: messageOf(t),
      retryAfter: t.retryAfter,
      firstOfWindow: counted && isFirstRefusal(t),
      tally: t
    })

    /** The first refusal of a window for an address or a client names no organization: it is logged instead. */
    const logFirstRefusals = (tallies: ReadonlyArray<Tally>) =>
      Effect.forEach(
        tallies.filter((t) => isFirstRefusal(t) && t.limit !== limits.apiKey && t.limit !== limits.passwordAccount),
        (t) =>
          Effect.logWarning(`rate limit reached: ${t.limit.name} for ${t.subject}`).pipe(
            Effect.annotateLogs({ limit: t.limit.name, max: t.limit.max, retry_after_seconds: t.retryAfter })
          ),
        { discard: true }
      )

    /** Counts an attempt; the refusal with the longest wait when a limit is exceeded. */
    const attempt = (subjects: ReadonlyArray<Subject>) =>
      Effect.gen(function*() {
        const here = limiter.refusedHere(subjects)
        if (here !== undefined) return { refusal: refusalOf(here, false), tallies: [] as ReadonlyArray<Tally> }
        const tallies = yield* limiter.count(subjects)
        yield* logFirstRefusals(tallies)
        const over = tallies.filter(isOver).sort((a, b) => b.retryAfter - a.retryAfter)[0]
        return { refusal: over === undefined ? undefined : refusalOf(over, true), tallies }
      })

    const detailsOf = (t: Tally) => ({
      limit: t.limit.name,
      max: t.limit.max,
      window_seconds: windowSeconds(t.limit),
      retry_after_seconds: t.retryAfter
    })

    /**
     * A refused API key (wrong secret, revoked, unknown id): counted per key id and per source address.
     * Returns the 429 to answer instead of the 401, if a limit is exceeded, and what to audit: the first
     * refusal of the key's window and its first rate-limited attempt, nothing in between (`undefined`: the
     * key's limit is off, audit each refusal).
     */
    const apiKeyRefused = Effect.fn("RateLimits.apiKeyRefused")(function*(keyId: ApiKeyId | undefined) {
      const ip = yield* source
      const subjects: Array<Subject> = []
      if (keyId !== undefined) subjects.push({ limit: limits.apiKey, subject: keyId })
      if (ip !== undefined) subjects.push({ limit: limits.apiKeyIp, subject: ip })
      const { refusal, tallies } = yield* attempt(subjects)
      const error = refusal === undefined ? undefined : TooManyRequests.of(refusal.message, refusal.retryAfter)
      if (refusal !== undefined && tallies.length === 0) return { error, record: null }
      const key = tallies.find((t) => t.limit === limits.apiKey)
      const record: RefusalRecord | undefined = key === undefined
        ? undefined
        : isFirstRefusal(key)
        ? { action: "RATE_LIMITED", details: detailsOf(key) }
        : key.count === 1
        ? {
          action: "AUTHENTICATION_FAILED",
          details: {
            ...detailsOf(key),
            recorded: "the first refusal of this key in its window; later ones are counted"
          }
        }
        : null
      return { error, record }
    })

    /**
     * Counts a sign-in attempt before its password is checked (so parallel guesses cannot all pass one
     * check): per account and per source address. A refusal means: answer 429 without checking.
     */
    const signInAttempt = Effect.fn("RateLimits.signInAttempt")(function*(email: string) {
      const ip = yield* source
      const subjects: Array<Subject> = [{ limit: limits.passwordAccount, subject: accountOf(email) }]
      if (ip !== undefined) subjects.push({ limit: limits.passwordIp, subject: ip })
      return (yield* attempt(subjects)).refusal
    })

    /** A correct password: the account starts afresh, and the attempt no longer counts for its address. */
    const signedIn = Effect.fn("RateLimits.signedIn")(function*(email: string) {
      yield* limiter.reset({ limit: limits.passwordAccount, subject: accountOf(email) })
      const ip = yield* source
      if (ip !== undefined) yield* limiter.release({ limit: limits.passwordIp, subject: ip })
    })

    /** Counts an OAuth client registration (RFC 7591, unauthenticated) per source address. */
    const registration = Effect.gen(function*() {
      const ip = yield* source
      if (ip === undefined) return undefined
      return (yield* attempt([{ limit: limits.registrationIp, subject: ip }])).refusal
    }).pipe(Effect.withSpan("RateLimits.registration", { captureStackTrace: false }))

    /** Counts a single sign-on start (unauthenticated: it stores a pending sign-in) per source address. */
    const ssoStart = Effect.gen(function*() {
      const ip = yield* source
      if (ip === undefined) return undefined
      return (yield* attempt([{ limit: limits.ssoStartIp, subject: ip }])).refusal
    }).pipe(Effect.withSpan("RateLimits.ssoStart", { captureStackTrace: false }))

    /**
     * A confidential OAuth client's wrong secret at the token or revocation endpoint, counted per client:
     * the refusal to answer with (429) once the client's limit is exceeded. The right secret still works.
     */
    const clientSecretRefused = Effect.fn("RateLimits.clientSecretRefused")(function*(clientId: string) {
      return (yield* attempt([{ limit: limits.clientSecret, subject: clientId.slice(0, 200) }])).refusal
    })

    return { apiKeyRefused, signInAttempt, signedIn, registration, ssoStart, clientSecretRefused, detailsOf } as const
  }),
  dependencies: [RateLimiter.Default, AuditLog.Default]
}) {}
