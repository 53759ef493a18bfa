import { Cause, Effect, Schedule } from "effect"
import { type AppliedCredentials, ConnectionEntity } from "../../cluster/ConnectionEntity.js"
import type { ConnectionId } from "../../schema/Ids.js"

interface EntityMoved {
  readonly _tag: "EntityMoved"
}

/**
 * This node's copy of what the Connection entities hand out, so a connector call reads its credentials
 * from memory; the entity (wherever its shard lives) is asked only when the copy expires.
 */
export class ConnectionCredentials extends Effect.Service<ConnectionCredentials>()("connectors/ConnectionCredentials", {
  effect: Effect.gen(function*() {
    const client = yield* ConnectionEntity.client
    const cache = new Map<ConnectionId, AppliedCredentials>()

    const get = (id: ConnectionId, options: { readonly staleToken?: boolean } = {}) => {
      const hit = cache.get(id)
      if (
        hit !== undefined && options.staleToken !== true && (hit.expires_at === null || hit.expires_at > Date.now())
      ) {
        return Effect.succeed(hit)
      }
      const asked = client(id).Credentials({ stale_token: options.staleToken === true })
      return asked.pipe(
        // the request cut by its entity's shard moving (this fiber itself interrupted skips this): a failure to
        // ask again, not an interruption of the caller
        Effect.catchAllCause((cause): Effect.Effect<never, Effect.Effect.Error<typeof asked> | EntityMoved> =>
          Cause.isInterruptedOnly(cause) ? Effect.fail({ _tag: "EntityMoved" }) : Effect.failCause(cause)
        ),
        // a peer that dies or leaves mid-call fails this at-most-once request: asking again is safe, after a
        // pause in which the entity's shard can move (at once, the three tries all met the leaving node)
        Effect.retry({
          schedule: Schedule.exponential("100 millis"),
          times: 5,
          while: (e) => e._tag !== "ConnectionUnusable"
        }),
        Effect.catchIf((e) => e._tag !== "ConnectionUnusable", Effect.die),
        Effect.tap((c) => Effect.sync(() => cache.set(id, c)))
      )
    }

    /** After an edit or deletion: drop this node's copy and the entity's. */
    const forget = (id: ConnectionId) =>
      Effect.sync(() => cache.delete(id)).pipe(
        Effect.zipRight(client(id).Forget().pipe(Effect.ignore))
      )

    /** For the fast path: this node's unexpired copy, else undefined. */
    const peek = (id: ConnectionId) => {
      const hit = cache.get(id)
      return hit !== undefined && (hit.expires_at === null || hit.expires_at > Date.now()) ? hit : undefined
    }

    return { get, forget, peek } as const
  })
}) {}
