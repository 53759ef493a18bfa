import { Duration, Effect, FiberRef, Redacted, Runtime } from "effect"
import { Unauthenticated } from "../../schema/Errors.js"
import type { ApiKeyId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { agentsForPerson } from "../access/GroupAgents.js"
import { CurrentAuditRequest } from "../audit/DeniedRequests.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { RateLimits } from "../security/RateLimits.js"
import { parseApiKey, secretMatches } from "./ApiKeySecret.js"
import { CallerTokens, isCallerToken } from "./CallerTokens.js"
import { IdentityRepo } from "./IdentityRepo.js"

interface Cached {
  readonly principal: Principal
  readonly hash: Uint8Array
  readonly expires: number
}

const TOUCH_EVERY_MS = 60_000
/** A key in use is read again, in the background, once this share of its cache time is left. */
const REFRESH_AHEAD = 0.25

/**
 * Resolves `x-api-key` to a Principal. Verified keys are cached for SWITCHYARD_API_KEY_CACHE_TTL so the
 * hot path does no database read; a revocation is seen at once on the node that revoked and within the
 * TTL on the others. The secret is checked against the stored hash on every request, cached or not. A key
 * in use is read again shortly before its entry expires (once, in the background): its requests stay on the
 * fast path, instead of each one that came as the entry lapsed reading the key.
 *
 * Only refusals are rate-limited (per key id and per source address): a correct key never touches the
 * limiter, and still works while its id is limited (its 256-bit secret cannot be guessed; the limit stops
 * the flood of refusals and of their audit records, not its owner).
 */
export class ApiKeyAuthenticator extends Effect.Service<ApiKeyAuthenticator>()("identity/ApiKeyAuthenticator", {
  effect: Effect.gen(function*() {
    const repo = yield* IdentityRepo
    const limits = yield* RateLimits
    const callerTokens = yield* CallerTokens
    const ttl = Duration.toMillis((yield* SwitchyardConfig).apiKeyCacheTtl)
    const cache = new Map<ApiKeyId, Cached>()
    const touched = new Map<ApiKeyId, number>()
    const refreshing = new Set<ApiKeyId>()
    // bumped by `forget`: a read begun before it does not cache what it read (a revocation on this node)
    let forgets = 0
    const runtime = yield* Effect.runtime<never>()

    const touch = (id: ApiKeyId, now: number) => {
      if ((touched.get(id) ?? 0) + TOUCH_EVERY_MS > now) return Effect.void
      touched.set(id, now)
      return repo.touchApiKey(id).pipe(Effect.ignoreLogged, Effect.forkDaemon, Effect.asVoid)
    }

    const load = Effect.fn("ApiKeyAuthenticator.load")(function*(id: ApiKeyId, now: number) {
      const before = forgets
      const row = yield* repo.findApiKeyForAuth(id)
      if (row === undefined) return undefined
      if (row.revoked_at !== null) {
        return yield* Unauthenticated.of("This API key was revoked. Create a new one.", "revoked_api_key")
      }
      if (row.kind === "personal" && row.member_role === null) {
        return yield* Unauthenticated.of(
          "This key's user is no longer a member of its organization.",
          "invalid_api_key"
        )
      }
      const entry: Cached = {
        principal: {
          organizationId: row.organization_id,
          userId: row.user_id,
          keyId: row.id,
          role: row.kind === "personal" ? row.member_role! : row.role,
          // an organization key is limited by its own list; a person by their groups' default agents
          agentIds: row.kind === "personal" ? agentsForPerson(row.member_role!, row.group_agents) : row.agent_ids
        },
        hash: row.secret_hash,
        expires: now + ttl
      }
      if (ttl > 0 && forgets === before) cache.set(id, entry)
      return entry
    })

    /** Reads a key in use again before its entry lapses; one that is gone or refused now leaves the cache. */
    const refreshAhead = (id: ApiKeyId, entry: Cached, now: number) => {
      if (entry.expires - now > ttl * REFRESH_AHEAD || refreshing.has(id)) return
      refreshing.add(id)
      Runtime.runFork(runtime)(
        load(id, now).pipe(
          Effect.flatMap((loaded) => loaded === undefined ? Effect.sync(() => cache.delete(id)) : Effect.void),
          Effect.catchTag("Unauthenticated", () => Effect.sync(() => cache.delete(id))),
          Effect.ignoreLogged,
          Effect.ensuring(Effect.sync(() => refreshing.delete(id)))
        )
      )
    }

    const authenticate = (apiKey: Redacted.Redacted<string>) =>
      Effect.gen(function*() {
        const raw = Redacted.value(apiKey).trim()
        if (raw === "") {
          return yield* Unauthenticated.of("Send your API key in the x-api-key header.", "missing_api_key")
        }
        if (isCallerToken(raw)) {
          // Switchyard calling itself as someone (the built-in Switchyard connector): see CallerTokens
          const caller = callerTokens.verify(raw)
          if (caller === undefined) {
            return yield* Unauthenticated.of("This caller token is not valid or has expired.", "invalid_api_key")
          }
          return caller
        }
        const parsed = parseApiKey(raw)
        if (parsed === undefined) {
          return yield* Unauthenticated.of(
            "The x-api-key header is not a Switchyard key (expected sy_<id>_<secret>).",
            "malformed_api_key"
          )
        }
        const now = Date.now()
        const cached = cache.get(parsed.id)
        const fresh = cached !== undefined && cached.expires > now
        const entry = fresh
          ? cached
          : yield* load(parsed.id, now).pipe(Effect.catchTag("Unauthenticated", (e) => refuse(parsed.id, e)))
        // made only on refusal: an error captures a stack, too dear for every request
        const invalid = () => Unauthenticated.of("This API key is not valid.", "invalid_api_key")
        if (entry === undefined) return yield* refuse(undefined, invalid())
        if (!secretMatches(parsed.secret, entry.hash)) return yield* refuse(parsed.id, invalid())
        if (fresh) refreshAhead(parsed.id, entry, now)
        yield* touch(parsed.id, now)
        return entry.principal
      })

    /** Counts a refusal: its own 401, or 429 past a limit; tells the audit whether this one is recorded. */
    const refuse = (keyId: ApiKeyId | undefined, error: Unauthenticated) =>
      Effect.gen(function*() {
        const { error: limited, record } = yield* limits.apiKeyRefused(keyId)
        const audit = yield* FiberRef.get(CurrentAuditRequest)
        if (audit !== undefined && record !== undefined) audit.refusalRecord = record
        return yield* limited ?? error
      })

    const forget = (id: ApiKeyId) =>
      Effect.sync(() => {
        forgets++
        cache.delete(id)
      })

    /** The organization a refused key names, if the key exists (for the audit record of the refusal). */
    const organizationOf = (apiKey: Redacted.Redacted<string>) =>
      Effect.gen(function*() {
        const parsed = parseApiKey(Redacted.value(apiKey).trim())
        if (parsed === undefined) return undefined
        const cached = cache.get(parsed.id)
        if (cached !== undefined) return { organizationId: cached.principal.organizationId, keyId: parsed.id }
        const row = yield* repo.findApiKeyForAuth(parsed.id)
        return row === undefined ? undefined : { organizationId: row.organization_id, keyId: row.id }
      })

    /** For the fast path: the principal of a key verified recently on this node, else undefined. */
    const peek = (raw: string | undefined) => {
      const parsed = raw === undefined ? undefined : parseApiKey(raw.trim())
      if (parsed === undefined) return undefined
      const now = Date.now()
      const entry = cache.get(parsed.id)
      if (entry === undefined || entry.expires <= now || (touched.get(parsed.id) ?? 0) + TOUCH_EVERY_MS <= now) {
        return undefined
      }
      if (!secretMatches(parsed.secret, entry.hash)) return undefined
      refreshAhead(parsed.id, entry, now)
      return entry.principal
    }

    return { authenticate, forget, peek, organizationOf } as const
  }),
  dependencies: [IdentityRepo.Default, CallerTokens.Default, RateLimits.Default]
}) {}
