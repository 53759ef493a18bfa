import { Effect, FiberRef } from "effect"
import { CurrentRequest } from "../http/RequestContext.js"
import { oauthSettings, type ProtectedResource, SCOPES } from "../oauth/Resources.js"
import { type McpCaller, TokenVerifier } from "../oauth/TokenVerifier.js"
import { httpError } from "./McpAnswer.js"
import { McpSessions } from "./McpSessions.js"

/**
 * Newest first: what `initialize` answers a client asking for a version we do not speak. 2025-03-26, the first
 * with Streamable HTTP, for clients built on SDKs of its time; its sessions also take JSON-RPC batches.
 */
export const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const
/** The version whose sessions take JSON-RPC batches (dropped from MCP in 2025-06-18). */
export const BATCH_VERSION = "2025-03-26"
const BEARER = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i

export type Headers = Readonly<Record<string, string | undefined>>

/**
 * Who may call the MCP endpoint (spec 4.8, 5.2), for every transport: the resource at a path, the Origin (DNS
 * rebinding), an OAuth bearer token bound to the resource, the protocol version and the session. A refusal is
 * the `Answer` that gives it (401 with the challenge pointing at the resource metadata, 403, 400, 404).
 */
export class McpAdmission extends Effect.Service<McpAdmission>()("mcp/McpAdmission", {
  effect: Effect.gen(function*() {
    const settings = yield* oauthSettings
    const verifier = yield* TokenVerifier
    const sessions = yield* McpSessions
    const allowedOrigins = new Set(
      [settings.issuer, settings.appUrl, ...settings.resources.map((r) => r.resource)].map((u) => new URL(u).origin)
    )

    const challenge = (resource: ProtectedResource, extra = "") =>
      `Bearer resource_metadata="${resource.metadataUrl}", scope="${SCOPES.join(" ")}"${extra}`

    /** Who calls, from `Authorization: Bearer`; anything else is a 401 pointing at the resource metadata. */
    const authenticate = (resource: ProtectedResource, headers: Headers) =>
      Effect.gen(function*() {
        const match = BEARER.exec(headers["authorization"] ?? "")
        if (match === null) {
          const apiKey = headers["x-api-key"] !== undefined
          return yield* Effect.fail(httpError(
            401,
            apiKey ? "api_key_not_accepted" : "missing_token",
            apiKey
              ? "The MCP endpoint does not accept x-api-key: sign in with OAuth and send Authorization: Bearer."
              : "Send an OAuth access token: Authorization: Bearer <token>. See the resource metadata to get one.",
            { "www-authenticate": challenge(resource) }
          ))
        }
        const caller = yield* verifier.verify(match[1]!, resource.resource).pipe(
          Effect.mapError((e) =>
            httpError(401, "invalid_token", e.message, {
              "www-authenticate": challenge(
                resource,
                `, error="invalid_token", error_description="${e.message.replace(/"/g, "'")}"`
              )
            })
          )
        )
        const info = yield* FiberRef.get(CurrentRequest)
        if (info !== undefined) info.organizationId = caller.principal.organizationId
        return caller
      })

    const originAllowed = (origin: string | undefined) => origin === undefined || allowedOrigins.has(origin)
    const versionSupported = (version: string | undefined) =>
      version === undefined || (PROTOCOL_VERSIONS as ReadonlyArray<string>).includes(version)

    /** Checks that apply to every method: Origin (DNS rebinding), token, protocol version. */
    const admit = (resource: ProtectedResource, headers: Headers) =>
      Effect.gen(function*() {
        const origin = headers["origin"]
        if (!originAllowed(origin)) {
          return yield* Effect.fail(
            httpError(403, "forbidden_origin", `Requests from the origin ${origin} are not accepted.`)
          )
        }
        const caller = yield* authenticate(resource, headers)
        const version = headers["mcp-protocol-version"]
        if (!versionSupported(version)) {
          return yield* Effect.fail(httpError(
            400,
            "unsupported_protocol_version",
            `MCP-Protocol-Version ${version} is not supported; use one of ${PROTOCOL_VERSIONS.join(", ")}.`
          ))
        }
        return caller
      })

    /** The caller's session named by `Mcp-Session-Id`: its id and negotiated protocol version. */
    const session = (caller: McpCaller, headers: Headers) =>
      Effect.gen(function*() {
        const id = headers["mcp-session-id"]
        if (id === undefined) {
          return yield* Effect.fail(
            httpError(400, "session_required", "Send the Mcp-Session-Id that initialize returned.")
          )
        }
        const found = yield* sessions.find(caller, id)
        if (found === undefined) {
          return yield* Effect.fail(httpError(404, "session_not_found", "No such session: initialize a new one."))
        }
        return { id, protocolVersion: found.protocol_version }
      })

    const endSession = (id: string) => sessions.end(id)

    /**
     * For the fast path: the caller, when everything `admit` and `session` check passes from this node's memory
     * (the token and the session verified recently, on either path); undefined leaves the request to the routes.
     */
    const peekAdmitted = (resource: ProtectedResource, headers: Headers): McpCaller | undefined => {
      if (!originAllowed(headers["origin"]) || !versionSupported(headers["mcp-protocol-version"])) return undefined
      const token = BEARER.exec(headers["authorization"] ?? "")?.[1]
      const caller = token === undefined ? undefined : verifier.peek(token, resource.resource)
      return caller !== undefined && sessions.peek(caller, headers["mcp-session-id"]) !== undefined ? caller : undefined
    }

    /**
     * The resources by path, each also at its path without the trailing slash (`/mcp`): the same resource and
     * tokens, but challenged with the metadata address that names it `…/mcp`, which is what a client at that URL
     * accepts (Resources.ts).
     */
    const byPath = new Map(settings.resources.flatMap((r) => [
      [r.path, r] as const,
      [r.unslashed.path, { ...r, metadataUrl: r.unslashed.metadataUrl }] as const
    ]))
    const resourceAt = (url: string) => byPath.get(url.split("?")[0]!)

    return {
      resources: settings.resources,
      resourceAt,
      admit,
      session,
      endSession,
      peekAdmitted
    } as const
  })
}) {}
