import { Effect } from "effect"
import { Agent, type Dispatcher } from "undici"
import { AppliedCredentials } from "../../cluster/ConnectionEntity.js"
import type { Principal } from "../../schema/Security.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { CallerTokens } from "../identity/CallerTokens.js"
import { SWITCHYARD_CONNECTOR_ID } from "./BuiltinConnectors.js"
import type { ConnectorRow } from "./ConnectorRepo.js"

/** Where this node's own HTTP server is reached from this node: its listen address, a wildcard as loopback. */
export const ownOrigin = (host: string, port: number) => {
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  const reachable = bare === "" || bare === "0.0.0.0" ? "127.0.0.1" : bare === "::" ? "::1" : bare
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`
}

/**
 * Switchyard's own REST API as the target of the built-in Switchyard connector. A call through it runs as
 * its caller, never as anyone else: the connection's stored credentials and server URL are ignored, and
 * the request carries a caller token minted for the caller's principal (CallerTokens), so it can do exactly
 * what the caller could do directly. It goes to this node's own listener (SWITCHYARD_HOST and
 * SWITCHYARD_HTTP_PORT) through a dispatcher of its own, used for that one origin only: the egress guard,
 * which refuses loopback to every other connector, is not opened.
 */
export class OwnApi extends Effect.Service<OwnApi>()("connectors/OwnApi", {
  scoped: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const tokens = yield* CallerTokens
    const origin = new URL(ownOrigin(config.host, config.httpPort)).origin
    const dispatcher: Dispatcher = yield* Effect.acquireRelease(
      Effect.sync(() => new Agent({ connections: 64 })),
      (d) => Effect.promise(() => d.close().catch(() => undefined))
    )

    /** True for the built-in Switchyard connector, whose calls go here. */
    const serves = (connector: Pick<ConnectorRow, "id">) => connector.id === SWITCHYARD_CONNECTOR_ID

    /** The credentials of one call: the caller's own, freshly minted. */
    const credentialsFor = (principal: Principal) =>
      new AppliedCredentials({
        headers: { "x-api-key": tokens.mint(principal) },
        query: {},
        cookies: {},
        expires_at: null
      })

    /** The dispatcher for a URL built against `origin`; anything else is refused rather than sent unguarded. */
    const dispatcherFor = (url: string) => new URL(url).origin === origin ? dispatcher : undefined

    return { origin, serves, credentialsFor, dispatcherFor } as const
  }),
  dependencies: [CallerTokens.Default]
}) {}
