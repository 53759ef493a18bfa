import { Cause, Effect, Schedule } from "effect"
import { type AppliedCredentials, ConnectionEntity, type ConnectionUnusable } from "../../cluster/ConnectionEntity.js"
import type { ConnectionId } from "../../schema/Ids.js"
import { singleFlight } from "../support/SingleFlight.js"

/**
 * How long one ask of a Connection entity may take. An ask sent to a node that was paused while the entity's
 * shard moved can go unanswered for good, and the call waiting for it must not wait with it: a longer wait
 * asks again (the entity shares one load between the asks, so a slow token endpoint is not cut short).
 */
const ASK_TIMEOUT = "5 seconds"
/** Asks are repeated for this long: past the longest an entity takes to answer (a token endpoint's 30 s). */
const ASK_FOR = "45 seconds"

/** Why an ask is made again: the shard of its entity moved, or no answer came in time. */
interface Unanswered {
  readonly _tag: "Unanswered"
}
const unanswered: Unanswered = { _tag: "Unanswered" }

/**
 * This node's copy of what the Connection entities hand out, so a connector call reads its credentials
 * from memory; the entity (wherever its shard lives) is asked only when the copy expires, once for all the
 * calls that find it expired meanwhile.
 */
export class ConnectionCredentials extends Effect.Service<ConnectionCredentials>()("connectors/ConnectionCredentials", {
  effect: Effect.gen(function*() {
    const client = yield* ConnectionEntity.client
    const cache = new Map<ConnectionId, AppliedCredentials>()
    /** The asks under way (not for a stale token), joined by the calls that need the same credentials. */
    const asking = singleFlight<ConnectionId, AppliedCredentials, ConnectionUnusable>((run) => Effect.forkDaemon(run))

    const ask = (id: ConnectionId, staleToken: boolean) => {
      const asked = client(id).Credentials({ stale_token: staleToken })
      return asked.pipe(
        Effect.timeoutFail({ duration: ASK_TIMEOUT, onTimeout: () => unanswered }),
        Effect.tapError((e) =>
          e === unanswered
            ? Effect.logWarning(`a Connection entity did not answer within ${ASK_TIMEOUT}; asking again`).pipe(
              Effect.annotateLogs("connection_id", id)
            )
            : Effect.void
        ),
        // the request cut by its entity's shard moving (this fiber itself interrupted skips this): a failure to
        // ask again, not an interruption of the caller
        Effect.catchAllCause((cause): Effect.Effect<never, Effect.Effect.Error<typeof asked> | Unanswered> =>
          Cause.isInterruptedOnly(cause) ? Effect.fail(unanswered) : Effect.failCause(cause)
        ),
        // a peer that dies or leaves mid-call fails this at-most-once request: asking again is safe, after a
        // pause in which the entity's shard can move (at once, the three tries all met the leaving node)
        Effect.retry({
          schedule: Schedule.exponential("100 millis").pipe(
            Schedule.union(Schedule.spaced("1 second")),
            Schedule.upTo(ASK_FOR)
          ),
          while: (e) => e._tag !== "ConnectionUnusable"
        }),
        Effect.catchIf((e) => e._tag !== "ConnectionUnusable", (e) =>
          Effect.dieMessage(
            `the connection's credentials could not be had from its entity for ${ASK_FOR} (${e._tag})`
          )),
        Effect.tap((c) => Effect.sync(() => cache.set(id, c)))
      )
    }

    const get = (id: ConnectionId, options: { readonly staleToken?: boolean } = {}) => {
      const hit = cache.get(id)
      if (
        hit !== undefined && options.staleToken !== true && (hit.expires_at === null || hit.expires_at > Date.now())
      ) {
        return Effect.succeed(hit)
      }
      // a token the target refused is refreshed for this call (the entity refreshes it once for all)
      return options.staleToken === true ? ask(id, true) : asking.run(id, ask(id, false))
    }

    /** After an edit or deletion: drop this node's copy and the entity's. */
    const forget = (id: ConnectionId) =>
      Effect.sync(() => {
        cache.delete(id)
        // calls from now on ask anew (the ask under way may carry what the edit replaced)
        asking.forget(id)
      }).pipe(
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
