import { Data, Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import type { ApiKeyId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { agentsForPerson } from "../access/GroupAgents.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { type AccessRow, OAuthRepo } from "./OAuthRepo.js"
import { sameResource } from "./Resources.js"
import { hashOf } from "./Secrets.js"

/** Who calls the MCP endpoint: the token's user in the token's organization, with the granted scopes. */
export interface McpCaller {
  readonly principal: Principal
  readonly email: string
  readonly scopes: ReadonlyArray<string>
  readonly grantId: string
  readonly resource: string
}

export class TokenRejected extends Data.TaggedError("TokenRejected")<{ readonly message: string }> {}

const TOUCH_EVERY_MS = 60_000

const callerOf = (row: AccessRow): McpCaller => ({
  principal: {
    organizationId: row.organization_id,
    userId: row.user_id,
    keyId: row.grant_id as ApiKeyId,
    role: row.role!,
    agentIds: agentsForPerson(row.role!, row.group_agents)
  },
  email: row.email,
  scopes: row.scope.split(" "),
  grantId: row.grant_id,
  resource: row.resource
})

/**
 * Verifies access tokens: by hash, unexpired, unrevoked, bound to the resource being called, and held
 * by someone still a member. Verified tokens are cached like API keys (SWITCHYARD_API_KEY_CACHE_TTL), so a
 * call does no database read; a revocation is seen at once on the node that revoked and within the TTL
 * on the others.
 */
export class TokenVerifier extends Effect.Service<TokenVerifier>()("oauth/TokenVerifier", {
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const ttl = Duration.toMillis((yield* SwitchyardConfig).apiKeyCacheTtl)
    const cache = new Map<string, { readonly row: AccessRow; readonly until: number }>()
    const touched = new Map<string, number>()

    const load = (key: string, hash: Buffer, now: number) =>
      Effect.map(repo.findAccess(hash), (row) => {
        if (row !== undefined && ttl > 0) {
          if (cache.size > 10_000) cache.clear()
          cache.set(key, { row, until: now + ttl })
        }
        return row
      })

    const verify = (token: string, resource: string) =>
      Effect.gen(function*() {
        const hash = hashOf(token)
        const key = hash.toString("base64")
        const now = Date.now()
        const cached = cache.get(key)
        const row = cached !== undefined && cached.until > now ? cached.row : yield* load(key, hash, now)
        if (row === undefined) return yield* new TokenRejected({ message: "The access token is not valid." })
        if (row.revoked_at !== null) return yield* new TokenRejected({ message: "The authorization was revoked." })
        // revoking an access token (not its grant) only ends its lifetime (OAuthRepo.expireToken): the row
        // cannot tell the two apart, and a refresh token answers both
        if (row.expires_at.getTime() <= now) {
          return yield* new TokenRejected({ message: "The access token is expired or was revoked; refresh it." })
        }
        if (!sameResource(row.resource, resource)) {
          return yield* new TokenRejected({
            message: `The access token was issued for another resource (${row.resource}).`
          })
        }
        if (row.role === null) {
          return yield* new TokenRejected({ message: "The token's user is no longer a member of its organization." })
        }
        if ((touched.get(row.grant_id) ?? 0) + TOUCH_EVERY_MS <= now) {
          touched.set(row.grant_id, now)
          yield* repo.touchGrant(row.grant_id).pipe(Effect.ignoreLogged, Effect.forkDaemon)
        }
        return callerOf(row)
      })

    /**
     * For the MCP fast path: the caller of a token this node verified recently, when it is still valid for
     * this resource and no touch is due; undefined means "ask verify" (which also gives the error).
     */
    const peek = (token: string, resource: string): McpCaller | undefined => {
      const cached = cache.get(Crypto.hash("sha256", token, "base64"))
      const now = Date.now()
      if (cached === undefined || cached.until <= now) return undefined
      const row = cached.row
      if (
        row.revoked_at !== null || row.expires_at.getTime() <= now || !sameResource(row.resource, resource) ||
        row.role === null ||
        (touched.get(row.grant_id) ?? 0) + TOUCH_EVERY_MS <= now
      ) return undefined
      return callerOf(row)
    }

    /** Drops this node's cached tokens of a grant (after its revocation). */
    const forgetGrant = (grantId: string) =>
      Effect.sync(() => {
        for (const [key, entry] of cache) if (entry.row.grant_id === grantId) cache.delete(key)
      })

    return { verify, peek, forgetGrant } as const
  }),
  dependencies: [OAuthRepo.Default]
}) {}
