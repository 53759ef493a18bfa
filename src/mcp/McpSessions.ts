import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import type { UserId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { OAuthRepo, type SessionRow } from "../oauth/OAuthRepo.js"
import { hashOf, randomSecret } from "../oauth/Secrets.js"
import type { McpCaller } from "../oauth/TokenVerifier.js"
import { TtlCache } from "../support/TtlCache.js"

const SESSION_ID = /^[\x21-\x7e]{1,200}$/
const TOUCH_EVERY_MS = 60_000

/**
 * MCP sessions, kept in PostgreSQL so that any node serves any request of a session (no sticky sessions).
 * Ids are 256-bit random, stored hashed, and bound to the user, organization and endpoint that opened
 * them: a session id in anyone else's hands is simply not found. Nodes keep a recent copy for
 * SWITCHYARD_API_KEY_CACHE_TTL, so an ended session stops at once on the node that ended it and within
 * that time on the others.
 */
export class McpSessions extends Effect.Service<McpSessions>()("mcp/McpSessions", {
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const cache = new TtlCache<string, SessionRow>(Duration.toMillis((yield* SwitchyardConfig).apiKeyCacheTtl))
    const touched = new Map<string, number>()
    // what ends each session's GET streams open on this node: a DELETE here ends them at once
    const enders = new Map<string, Set<() => void>>()

    const open = (caller: McpCaller, protocolVersion: string, clientInfo: unknown) =>
      Effect.gen(function*() {
        const id = randomSecret("mcp_")
        const row = {
          organization_id: caller.principal.organizationId,
          user_id: caller.principal.userId as UserId,
          resource: caller.resource,
          protocol_version: protocolVersion
        }
        yield* repo.insertSession(hashOf(id), row, clientInfo)
        cache.set(hashOf(id).toString("base64"), { ...row, ended_at: null })
        return id
      })

    /** The caller's live session with this id, or undefined (unknown, ended, or someone else's). */
    const find = (caller: McpCaller, id: string) =>
      Effect.gen(function*() {
        if (!SESSION_ID.test(id)) return undefined
        const hash = hashOf(id)
        const key = hash.toString("base64")
        const cached = cache.get(key)
        const row = cached ?? (yield* repo.findSession(hash))
        if (row === undefined) return undefined
        // only a fresh read restarts the TTL: an end on another node is seen within it
        if (cached === undefined) cache.set(key, row)
        const mine = row.ended_at === null && row.user_id === caller.principal.userId &&
          row.organization_id === caller.principal.organizationId && row.resource === caller.resource
        if (!mine) return undefined
        const now = Date.now()
        if ((touched.get(key) ?? 0) + TOUCH_EVERY_MS <= now) {
          touched.set(key, now)
          if (touched.size > 10_000) touched.clear()
          yield* repo.touchSession(hash).pipe(Effect.ignoreLogged, Effect.forkDaemon)
        }
        return row
      })

    /** For the fast path: the caller's session when this node holds it and no touch is due; else undefined. */
    const peek = (caller: McpCaller, id: string | undefined) => {
      if (id === undefined || !SESSION_ID.test(id)) return undefined
      // the key `find` uses (hashOf(id) in base64), without a Buffer in between
      const key = Crypto.hash("sha256", id, "base64")
      const row = cache.get(key)
      const mine = row !== undefined && row.ended_at === null && row.user_id === caller.principal.userId &&
        row.organization_id === caller.principal.organizationId && row.resource === caller.resource
      return mine && (touched.get(key) ?? 0) + TOUCH_EVERY_MS > Date.now() ? row : undefined
    }

    const end = (id: string) =>
      Effect.gen(function*() {
        const hash = hashOf(id)
        const key = hash.toString("base64")
        cache.delete(key)
        yield* repo.endSession(hash)
        for (const f of enders.get(key) ?? []) f()
        enders.delete(key)
      })

    /**
     * Completes when the caller's session ends: at once when it ends on this node, else when a check every
     * TOUCH_EVERY_MS no longer finds it (ended on another node), so an open GET stream ends with it.
     */
    const ended = (caller: McpCaller, id: string) => {
      const key = hashOf(id).toString("base64")
      const here = Effect.async<void>((resume) => {
        const f = () => resume(Effect.void)
        const set = enders.get(key) ?? new Set()
        enders.set(key, set.add(f))
        return Effect.sync(() => {
          set.delete(f)
          if (set.size === 0 && enders.get(key) === set) enders.delete(key)
        })
      })
      const elsewhere = find(caller, id).pipe(
        Effect.delay(TOUCH_EVERY_MS),
        Effect.repeat({ until: (row) => row === undefined })
      )
      return Effect.asVoid(Effect.race(here, elsewhere))
    }

    return { open, find, peek, end, ended } as const
  }),
  dependencies: [OAuthRepo.Default]
}) {}
