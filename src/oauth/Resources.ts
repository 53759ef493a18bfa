import { Duration, Effect, Option } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"

/** `mcp:read` runs read-only tools; `mcp:write` also runs tools that change or start something. */
export const SCOPES = ["mcp:read", "mcp:write"] as const
export type Scope = (typeof SCOPES)[number]

/** The built-in agent that operates Switchyard; its MCP endpoint is `/<name>-mcp/` (spec 4.10). */
export const BUILTIN_AGENT_NAME = "switchyard"
export const BUILTIN_MCP_PATH = `/${BUILTIN_AGENT_NAME}-mcp/`

export interface ProtectedResource {
  /** The exact URL clients use, and the audience its tokens are bound to (RFC 8707). */
  readonly resource: string
  readonly path: string
  /** Where its RFC 9728 metadata is served. */
  readonly metadataUrl: string
  readonly serverName: string
}

/** The authorization server and the resources it protects, all derived from the configured public URLs. */
export const oauthSettings = Effect.map(SwitchyardConfig, (config) => {
  const issuer = config.baseUrl
  const mcp: ProtectedResource = {
    resource: `${issuer}/mcp/`,
    path: "/mcp/",
    metadataUrl: `${issuer}/.well-known/oauth-protected-resource`,
    serverName: "Switchyard MCP"
  }
  const builtin: ProtectedResource | undefined = Option.match(config.mcpPublicUrl, {
    onNone: () => undefined,
    onSome: (url) => {
      const base = url.replace(/\/+$/, "")
      return {
        resource: `${base}${BUILTIN_MCP_PATH}`,
        path: BUILTIN_MCP_PATH,
        metadataUrl: `${base}/.well-known/oauth-protected-resource${BUILTIN_MCP_PATH.replace(/\/$/, "")}`,
        serverName: "Switchyard agent MCP"
      }
    }
  })
  const resources = builtin === undefined ? [mcp] : [mcp, builtin]
  return {
    issuer,
    appUrl: config.appBaseUrl,
    mcp,
    builtin,
    resources,
    findResource: (uri: string) => resources.find((r) => r.resource === uri),
    accessTokenTtlMs: Duration.toMillis(config.oauthAccessTokenTtl),
    refreshTokenTtlMs: Duration.toMillis(config.oauthRefreshTokenTtl)
  }
})
export type OAuthSettings = Effect.Effect.Success<typeof oauthSettings>
