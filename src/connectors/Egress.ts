import { Effect } from "effect"
import type { Dispatcher } from "undici"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { parseEgressAllow } from "./egress/EgressPolicy.js"
import { findEgressRefusal, makeGuardedDispatcher } from "./egress/GuardedDispatcher.js"

/**
 * The one way out to third-party systems: an HTTP dispatcher that refuses internal addresses (checked on
 * the resolved IP of every new connection) unless SWITCHYARD_EGRESS_ALLOW opens them.
 */
export class Egress extends Effect.Service<Egress>()("connectors/Egress", {
  scoped: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const policy = yield* Effect.try({
      try: () => parseEgressAllow(config.egressAllow),
      catch: (e) => new Error(`SWITCHYARD_EGRESS_ALLOW: ${(e as Error).message}`)
    }).pipe(Effect.orDie)
    const dispatcher: Dispatcher = yield* Effect.acquireRelease(
      Effect.sync(() => makeGuardedDispatcher(policy, { connections: 256 })),
      (d) => Effect.promise(() => d.close().catch(() => undefined))
    )
    /** A person-readable reason for a failed outgoing call. */
    const explain = (error: unknown): string => {
      const refused = findEgressRefusal(error)
      if (refused !== undefined) {
        return `${refused.host} resolves to ${refused.address} (${refused.reason}), which Switchyard's outgoing calls may not reach; ` +
          `an operator can allow it with SWITCHYARD_EGRESS_ALLOW`
      }
      let e: any = error
      while (e?.cause !== undefined && e.code === undefined) e = e.cause
      return e?.code !== undefined ? `${e.code}${e.message ? `: ${e.message}` : ""}` : String(e?.message ?? e)
    }
    return { dispatcher, policy, explain, refusal: findEgressRefusal } as const
  })
}) {}
