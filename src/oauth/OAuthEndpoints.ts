import { HttpServerResponse } from "@effect/platform"
import type { ErrorFields } from "../http/ErrorEnvelope.js"

/** The authorization server's endpoints (RFC 9728 and RFC 8414 metadata, RFC 7591, RFC 6749, RFC 7009). */
export const OAUTH_PATHS = {
  prm: "/.well-known/oauth-protected-resource",
  asm: "/.well-known/oauth-authorization-server",
  register: "/oauth/register",
  authorize: "/oauth/authorize",
  token: "/oauth/token",
  revoke: "/oauth/revoke"
} as const

// browser-based MCP clients read metadata and call these endpoints cross-origin; none of them uses cookies
export const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
  "access-control-max-age": "600"
}
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" }

export const oauthJson = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { ...CORS, ...headers } })

/** RFC 6749 §5.2 (and RFC 7591 §3.2.2): the error shape OAuth clients parse. */
export const oauthErrorResponse = (
  status: number,
  error: string,
  description: string,
  headers: Record<string, string> = {}
) => oauthJson({ error, error_description: description }, status, { ...NO_STORE, ...headers })

const ENDPOINT = new RegExp(
  `^(?:${[OAUTH_PATHS.register, OAUTH_PATHS.authorize, OAUTH_PATHS.token, OAUTH_PATHS.revoke].join("|")}|` +
    `${OAUTH_PATHS.prm.replace(/\./g, "\\.")}(?:/[^/?]*)?|${OAUTH_PATHS.asm.replace(/\./g, "\\.")})/?(?:\\?|$)`
)

/**
 * How a refusal made for every route alike (JsonBody's checks in the request pipeline: NUL, JSON too deep, a
 * body too large; a method the path does not take; a failure of ours) is written on an OAuth endpoint: in
 * OAuth's shape, as `invalid_client_metadata` at registration (RFC 7591 has no `invalid_request`) and
 * `invalid_request` elsewhere, with the edge's message and status. Undefined for any other path.
 */
export const oauthRefusal = (url: string) => {
  if (!ENDPOINT.test(url)) return undefined
  const registration = url.startsWith(OAUTH_PATHS.register)
  return (status: number, refused: ErrorFields, headers: Record<string, string> = {}) =>
    oauthErrorResponse(
      status,
      status === 503
        ? "temporarily_unavailable"
        : status >= 500
        ? "server_error"
        : registration
        ? "invalid_client_metadata"
        : "invalid_request",
      refused.message,
      headers
    )
}
