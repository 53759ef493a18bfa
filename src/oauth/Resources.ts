import { Duration, Effect, Option } from "effect"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"

/** `mcp:read` runs read-only tools; `mcp:write` also runs tools that change or start something. */
export const SCOPES = ["mcp:read", "mcp:write"] as const
export type Scope = (typeof SCOPES)[number]

/** The built-in agent that operates Switchyard; its MCP endpoint is `/<name>-mcp/` (spec 4.10). */
export const BUILTIN_AGENT_NAME = "switchyard"
export const BUILTIN_MCP_PATH = `/${BUILTIN_AGENT_NAME}-mcp/`

export interface ProtectedResource {
  /** The URL clients use, with its trailing slash, and the audience its tokens are bound to (RFC 8707). */
  readonly resource: string
  readonly path: string
  /** Where its RFC 9728 metadata is served. */
  readonly metadataUrl: string
  readonly serverName: string
  /**
   * The same resource as a client given its URL without the trailing slash (`…/mcp`) names it, and the
   * RFC 9728 path-inserted address of the metadata naming it so. The MCP SDK takes a resource only when
   * its URL starts with the resource's path, so a client at `…/mcp` must be told `…/mcp`.
   */
  readonly unslashed: { readonly resource: string; readonly path: string; readonly metadataUrl: string }
}

const unslash = (uri: string) => uri.replace(/\/$/, "")

/** `…/mcp` and `…/mcp/` name one resource: authorizing, exchanging, refreshing and calling with either is the same. */
export const sameResource = (a: string, b: string) => a === b || unslash(a) === unslash(b)

const PRM_PATH = "/.well-known/oauth-protected-resource"

const unslashedOf = (base: string, path: string) => ({
  resource: `${base}${unslash(path)}`,
  path: unslash(path),
  metadataUrl: `${base}${PRM_PATH}${unslash(path)}`
})

/** The authorization server and the resources it protects, all derived from the configured public URLs. */
export const oauthSettings = Effect.map(SwitchyardConfig, (config) => {
  const issuer = config.baseUrl
  const mcp: ProtectedResource = {
    resource: `${issuer}/mcp/`,
    path: "/mcp/",
    metadataUrl: `${issuer}${PRM_PATH}`,
    serverName: "Switchyard MCP",
    unslashed: unslashedOf(issuer, "/mcp/")
  }
  const builtin: ProtectedResource | undefined = Option.match(config.mcpPublicUrl, {
    onNone: () => undefined,
    onSome: (url) => {
      const base = url.replace(/\/+$/, "")
      return {
        resource: `${base}${BUILTIN_MCP_PATH}`,
        path: BUILTIN_MCP_PATH,
        // path-inserted (RFC 9728 §3.1): the trailing slash stays, so the document names this form
        metadataUrl: `${base}${PRM_PATH}${BUILTIN_MCP_PATH}`,
        serverName: "Switchyard agent MCP",
        unslashed: unslashedOf(base, BUILTIN_MCP_PATH)
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
    findResource: (uri: string) => resources.find((r) => sameResource(r.resource, uri)),
    accessTokenTtlMs: Duration.toMillis(config.oauthAccessTokenTtl),
    refreshTokenTtlMs: Duration.toMillis(config.oauthRefreshTokenTtl)
  }
})
export type OAuthSettings = Effect.Effect.Success<typeof oauthSettings>
