import { Layer } from "effect"
import { AuditLog } from "../audit/AuditLog.js"
import { ConnectorsLive } from "../connectors/ConnectorsLive.js"
import { AuthorizationServer } from "./AuthorizationServer.js"
import { Clients } from "./Clients.js"
import { OAuthRepo } from "./OAuthRepo.js"
import { TokenVerifier } from "./TokenVerifier.js"

/**
 * The authorization server's services, built once per node: the MCP endpoint, the token endpoint and the
 * REST revocation share one TokenVerifier, so a revocation clears the cache the MCP endpoint reads.
 */
export const OAuthLive = AuthorizationServer.DefaultWithoutDependencies.pipe(
  Layer.provideMerge(Layer.mergeAll(Clients.DefaultWithoutDependencies, TokenVerifier.DefaultWithoutDependencies)),
  Layer.provideMerge(Layer.merge(OAuthRepo.Default, AuditLog.Default)),
  Layer.provide(ConnectorsLive)
)
