import { HttpLayerRouter, type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { inspectFormText, isJsonMediaType, parseJsonBody, unsupportedMediaType } from "../http/JsonBody.js"
import { RouteTable } from "../http/RouteTable.js"
import { ExpiredRowsLive } from "../security/ExpiredRows.js"
import { RateLimits } from "../security/RateLimits.js"
import { AuthorizationServer } from "./AuthorizationServer.js"
import { Clients } from "./Clients.js"
import { CORS, NO_STORE, OAUTH_PATHS as PATHS, oauthErrorResponse, oauthJson as json } from "./OAuthEndpoints.js"
import type { OAuthError } from "./OAuthError.js"
import { OAuthLive } from "./OAuthLive.js"
import { BUILTIN_MCP_PATH, oauthSettings, type ProtectedResource, SCOPES } from "./Resources.js"

const oauthError = (e: OAuthError) => Effect.succeed(oauthErrorResponse(e.status, e.error, e.description))

/**
 * A form body, checked by the edge's rule for it (JsonBody), or the refusal to answer with. A body that cannot
 * be read (too large, cut off) fails as the pipeline knows to answer, in the OAuth shape here.
 */
const formOf = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const type = (request.headers["content-type"] ?? "").toLowerCase()
    const text = yield* request.text
    if (!type.startsWith("application/x-www-form-urlencoded")) {
      return oauthErrorResponse(400, "invalid_request", "Send the parameters as application/x-www-form-urlencoded.")
    }
    const refused = inspectFormText(text)
    if (refused !== undefined) return oauthErrorResponse(400, "invalid_request", refused.message)
    return new URLSearchParams(text)
  })

const protectedResourceMetadata = (resource: string, r: ProtectedResource, issuer: string) => ({
  resource,
  authorization_servers: [issuer],
  scopes_supported: SCOPES,
  bearer_methods_supported: ["header"],
  resource_name: r.serverName
})

/**
 * The authorization server's HTTP side: RFC 9728 resource metadata, RFC 8414 server metadata, RFC 7591
 * registration, the authorization endpoint (which hands the browser to the sign-in page), the token
 * endpoint and RFC 7009 revocation.
 */
export const OAuthRoutes = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* HttpLayerRouter.HttpRouter
    const routes = yield* RouteTable
    const settings = yield* oauthSettings
    const server = yield* AuthorizationServer
    const clients = yield* Clients
    const limits = yield* RateLimits

    const serverMetadata = {
      issuer: settings.issuer,
      authorization_endpoint: `${settings.issuer}${PATHS.authorize}`,
      token_endpoint: `${settings.issuer}${PATHS.token}`,
      registration_endpoint: `${settings.issuer}${PATHS.register}`,
      revocation_endpoint: `${settings.issuer}${PATHS.revoke}`,
      scopes_supported: SCOPES,
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      token_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
      revocation_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
      code_challenge_methods_supported: ["S256"],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true
    }

    const notFound = json({ error: "not_found", error_description: "No such resource on this server." }, 404)
    /**
     * A path-inserted document names its resource in the form of its own address (RFC 9728 §3.3):
     * `…/oauth-protected-resource/mcp` says `<base>/mcp`, `…/mcp/` says `<base>/mcp/` — one resource either
     * way (Resources.ts `sameResource`); the MCP endpoint points a client at the form it called.
     */
    const metadataOf = (r: ProtectedResource) => (request: HttpServerRequest.HttpServerRequest) =>
      Effect.succeed(json(protectedResourceMetadata(
        new URL(request.url, "http://x").pathname.endsWith("/") ? r.resource : r.unslashed.resource,
        r,
        settings.issuer
      )))
    yield* router.add(
      "GET",
      PATHS.prm,
      Effect.succeed(json(protectedResourceMetadata(settings.mcp.resource, settings.mcp, settings.issuer)))
    )
    yield* router.add("GET", `${PATHS.prm}/mcp` as const, metadataOf(settings.mcp))
    yield* router.add(
      "GET",
      `${PATHS.prm}${BUILTIN_MCP_PATH.replace(/\/$/, "")}` as `/${string}`,
      settings.builtin === undefined ? Effect.succeed(notFound) : metadataOf(settings.builtin)
    )
    yield* router.add("GET", PATHS.asm, Effect.succeed(json(serverMetadata)))

    yield* router.add("POST", PATHS.register, (request) =>
      Effect.gen(function*() {
        // unauthenticated: every attempt counts for its source address; the refusal in RFC 7591's error form
        const refused = yield* limits.registration
        if (refused !== undefined) {
          const retry = { ...NO_STORE, "retry-after": String(refused.retryAfter) }
          return json({ error: "rate_limited", error_description: refused.message }, 429, retry)
        }
        // RFC 7591 §3.1: the metadata is sent as JSON, by the edge's rules for JSON (JsonBody)
        const type = request.headers["content-type"]
        if (!isJsonMediaType(type)) {
          return oauthErrorResponse(415, "invalid_client_metadata", unsupportedMediaType(type).message)
        }
        const body = parseJsonBody(yield* request.text)
        if (!body.ok) return oauthErrorResponse(400, "invalid_client_metadata", body.error.message)
        return yield* clients.register(body.value).pipe(
          Effect.map((created) => json(created, 201, NO_STORE)),
          Effect.catchTag("OAuthError", oauthError)
        )
      }))

    yield* router.add("GET", PATHS.authorize, (request) => {
      const query = new URL(request.url, "http://x").search
      return server.validate(new URLSearchParams(query)).pipe(
        Effect.map(() => HttpServerResponse.redirect(`${settings.appUrl}/oauth_login${query}`, { status: 302 })),
        Effect.catchAll((failure) =>
          Effect.succeed(
            failure._tag === "Redirect"
              ? HttpServerResponse.redirect(failure.location, { status: 302 })
              : oauthErrorResponse(400, failure.error, failure.message)
          )
        )
      )
    })

    const formEndpoint = (
      handle: (authorization: string | undefined, form: URLSearchParams) => Effect.Effect<unknown, OAuthError>
    ) =>
    (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const form = yield* formOf(request)
        if (!(form instanceof URLSearchParams)) return form
        return yield* handle(request.headers["authorization"], form).pipe(
          Effect.map((body) => json(body ?? {}, 200, NO_STORE)),
          Effect.catchTag("OAuthError", (e) =>
            e.failedClientId === undefined ? oauthError(e) : Effect.flatMap(
              limits.clientSecretRefused(e.failedClientId),
              (refused) =>
                refused === undefined ? oauthError(e) : Effect.succeed(json(
                  { error: "rate_limited", error_description: refused.message },
                  429,
                  { ...NO_STORE, "retry-after": String(refused.retryAfter) }
                ))
            ))
        )
      })
    yield* router.add("POST", PATHS.token, formEndpoint(server.token))
    yield* router.add("POST", PATHS.revoke, formEndpoint(server.revoke))

    const preflight = Effect.succeed(HttpServerResponse.empty({ status: 204, headers: CORS }))
    for (const path of [PATHS.prm, `${PATHS.prm}/mcp` as const, PATHS.asm, PATHS.register, PATHS.token, PATHS.revoke]) {
      yield* router.add("OPTIONS", path, preflight)
    }
    for (
      const [method, path] of [
        ["GET", PATHS.prm],
        ["GET", PATHS.asm],
        ["POST", PATHS.register],
        ["GET", PATHS.authorize],
        ["POST", PATHS.token],
        ["POST", PATHS.revoke]
      ] as const
    ) {
      routes.add(method, new RegExp(`^${path.replace(/\./g, "\\.")}/?$`))
    }
  })
).pipe(Layer.provide(OAuthLive), Layer.provide(RateLimits.Default), Layer.provide(ExpiredRowsLive))
