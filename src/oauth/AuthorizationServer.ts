import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { OrganizationId, UserId } from "../../schema/Ids.js"
import { AuditLog } from "../audit/AuditLog.js"
import { transactionIn } from "../db/Transaction.js"
import { Clients } from "./Clients.js"
import { OAuthError } from "./OAuthError.js"
import { type ClientRow, OAuthRepo } from "./OAuthRepo.js"
import { oauthSettings, type ProtectedResource, sameResource, SCOPES } from "./Resources.js"
import { hashOf, newGrantId, pkceMatches, randomSecret } from "./Secrets.js"
import { TokenVerifier } from "./TokenVerifier.js"

const CODE_TTL_MS = 5 * 60 * 1000

/** A validated `/oauth/authorize` request, as the sign-in and consent pages show and complete it. */
export interface AuthorizeRequest {
  readonly client: ClientRow
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly resource: ProtectedResource
  readonly scopes: ReadonlyArray<string>
  readonly state: string | undefined
}

/**
 * Errors before the client and its redirect URI are known are shown to the person, never redirected (RFC 6749
 * §4.1.2.1), with their OAuth `error`: `invalid_client` for a client that cannot be used, else `invalid_request`.
 */
export type AuthorizeFailure =
  | { readonly _tag: "Unredirectable"; readonly error: string; readonly message: string }
  | { readonly _tag: "Redirect"; readonly location: string }

/**
 * The first parameter given more than once. RFC 6749 §3.1 and §3.2: parameters must not be repeated, and a
 * server that took one of the values would be guessing which the client meant (and what a proxy or a
 * client library in between took), so the request is refused whole.
 */
export const repeatedParameter = (params: URLSearchParams): string | undefined => {
  const seen = new Set<string>()
  for (const name of params.keys()) {
    if (seen.has(name)) return name
    seen.add(name)
  }
  return undefined
}

const givenTwice = (name: string) => `\`${name}\` is given more than once.`

/** The token and revocation endpoints: every parameter once, checked before anything is looked up or used. */
const singleParameters = (form: URLSearchParams) => {
  const repeated = repeatedParameter(form)
  return repeated === undefined ? Effect.void : Effect.fail(OAuthError.of("invalid_request", givenTwice(repeated)))
}

const withParams = (uri: string, params: Record<string, string | undefined>) => {
  const url = new URL(uri)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v)
  return url.toString()
}

/** The authorization server (OAuth 2.1 with PKCE S256, RFC 8707 resources, refresh rotation). */
export class AuthorizationServer extends Effect.Service<AuthorizationServer>()("oauth/AuthorizationServer", {
  effect: Effect.gen(function*() {
    const repo = yield* OAuthRepo
    const clients = yield* Clients
    const verifier = yield* TokenVerifier
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const settings = yield* oauthSettings

    const redirectError = (redirectUri: string, state: string | undefined, error: string, description: string) =>
      Effect.fail<AuthorizeFailure>({
        _tag: "Redirect",
        location: withParams(redirectUri, { error, error_description: description, state, iss: settings.issuer })
      })

    const validate = (params: URLSearchParams): Effect.Effect<AuthorizeRequest, AuthorizeFailure> =>
      Effect.gen(function*() {
        const unredirectable = (error: string, message: string) =>
          Effect.fail<AuthorizeFailure>({ _tag: "Unredirectable", error, message })
        for (const name of ["client_id", "redirect_uri"]) {
          if (params.getAll(name).length > 1) return yield* unredirectable("invalid_request", givenTwice(name))
        }
        const clientId = params.get("client_id")
        if (clientId === null) {
          return yield* unredirectable("invalid_request", "The request names no client (`client_id`).")
        }
        const client = yield* clients.resolve(clientId).pipe(
          Effect.mapError((e): AuthorizeFailure => ({ _tag: "Unredirectable", error: e.error, message: e.description }))
        )
        const asked = params.get("redirect_uri") ?? undefined
        const redirectUri = asked === undefined && client.redirect_uris.length === 1 ? client.redirect_uris[0] : asked
        if (redirectUri === undefined || !client.redirect_uris.includes(redirectUri)) {
          return yield* unredirectable(
            "invalid_request",
            "The redirect address does not exactly match one the client registered."
          )
        }
        // a repeated `state` is not sent back: which one the client keeps is not known
        const state = params.getAll("state").length > 1 ? undefined : params.get("state") ?? undefined
        const fail = (error: string, description: string) => redirectError(redirectUri, state, error, description)
        const repeated = repeatedParameter(params)
        if (repeated !== undefined) return yield* fail("invalid_request", givenTwice(repeated))
        if (params.get("response_type") !== "code") {
          return yield* fail("unsupported_response_type", "Only the authorization code flow (`response_type=code`).")
        }
        const challenge = params.get("code_challenge")
        if (challenge === null) return yield* fail("invalid_request", "PKCE is required: send `code_challenge`.")
        if (params.get("code_challenge_method") !== "S256") {
          return yield* fail("invalid_request", "Only PKCE `code_challenge_method=S256` is accepted.")
        }
        if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
          return yield* fail("invalid_request", "`code_challenge` is not a base64url SHA-256 digest.")
        }
        const resourceParam = params.get("resource")
        const resource = resourceParam === null ? settings.mcp : settings.findResource(resourceParam)
        if (resource === undefined) {
          return yield* fail(
            "invalid_target",
            `Unknown \`resource\`; this server protects ${settings.resources.map((r) => r.resource).join(", ")}.`
          )
        }
        const requested = (params.get("scope") ?? "").split(" ").filter((s) => s !== "")
        const unknown = requested.find((s) => !(SCOPES as ReadonlyArray<string>).includes(s))
        if (unknown !== undefined) return yield* fail("invalid_scope", `Unknown scope '${unknown}'.`)
        // a client that registered a scope (RFC 7591) asks within it: no more, and by default exactly it
        const registered = client.scope === null ? [] : client.scope.split(" ").filter((s) => s !== "")
        const allowed = registered.length === 0 ? SCOPES : SCOPES.filter((s) => registered.includes(s))
        const beyond = requested.find((s) => !(allowed as ReadonlyArray<string>).includes(s))
        if (beyond !== undefined) {
          return yield* fail(
            "invalid_scope",
            `Scope '${beyond}' is beyond the one this client registered (${allowed.join(" ")}).`
          )
        }
        return {
          client,
          redirectUri,
          codeChallenge: challenge,
          resource,
          scopes: requested.length === 0 ? [...allowed] : allowed.filter((s) => requested.includes(s)),
          state
        }
      })

    /**
     * Consent given in the web session `sessionHash`: a single-use code (≤ 5 minutes) sent back to the client;
     * undefined when that session has ended meanwhile.
     */
    const approve = Effect.fn("AuthorizationServer.approve")(
      function*(request: AuthorizeRequest, userId: UserId, organizationId: OrganizationId, sessionHash: Uint8Array) {
        const code = randomSecret("sy_ac_")
        const inserted = yield* repo.insertCode(hashOf(code), sessionHash, {
          client_id: request.client.id,
          organization_id: organizationId,
          user_id: userId,
          redirect_uri: request.redirectUri,
          code_challenge: request.codeChallenge,
          resource: request.resource.resource,
          scope: request.scopes.join(" "),
          expires_at: new Date(Date.now() + CODE_TTL_MS)
        })
        if (!inserted) return undefined
        return withParams(request.redirectUri, { code, state: request.state, iss: settings.issuer })
      }
    )

    const deny = (request: AuthorizeRequest) =>
      withParams(request.redirectUri, {
        error: "access_denied",
        error_description: "The user denied the request.",
        state: request.state,
        iss: settings.issuer
      })

    /** `scope`: the access token's; the refresh token keeps the grant's (RFC 6749 section 6). */
    const issueTokens = (grantId: string, scope: string, grantScope: string) =>
      Effect.gen(function*() {
        const access = randomSecret("sy_at_")
        const refresh = randomSecret("sy_rt_")
        const now = Date.now()
        yield* repo.insertToken(
          hashOf(access),
          "access",
          grantId,
          new Date(now + settings.accessTokenTtlMs),
          scope === grantScope ? null : scope
        )
        yield* repo.insertToken(hashOf(refresh), "refresh", grantId, new Date(now + settings.refreshTokenTtlMs))
        return {
          access_token: access,
          token_type: "Bearer",
          expires_in: Math.floor(settings.accessTokenTtlMs / 1000),
          refresh_token: refresh,
          scope
        }
      })

    const revokeFamily = (grantId: string) => Effect.zipRight(repo.revokeGrant(grantId), verifier.forgetGrant(grantId))

    const checkResource = (form: URLSearchParams, bound: string) => {
      const resource = form.get("resource")
      return resource === null || sameResource(resource, bound)
        ? Effect.void
        : Effect.fail(OAuthError.of("invalid_target", "`resource` is not the one this grant was issued for."))
    }

    const authorizationCode = (client: ClientRow, form: URLSearchParams) =>
      Effect.gen(function*() {
        const code = form.get("code")
        const codeVerifier = form.get("code_verifier")
        if (code === null || codeVerifier === null) {
          return yield* OAuthError.of("invalid_request", "Send `code` and `code_verifier`.")
        }
        const hash = hashOf(code)
        const { code: row, replayed } = yield* repo.consumeCode(hash)
        if (row === undefined) return yield* OAuthError.of("invalid_grant", "Unknown authorization code.")
        if (replayed) {
          // a code seen twice was stolen or replayed: whatever was issued from it stops working (the code was
          // marked used in its own statement, so a failed exchange burns it too, and this revocation commits)
          if (row.grant_id !== null) yield* revokeFamily(row.grant_id)
          return yield* OAuthError.of(
            "invalid_grant",
            "This authorization code was already presented: a code works once, a refused exchange (e.g. a wrong " +
              "`code_verifier`) included. Start the authorization again."
          )
        }
        if (row.client_id !== client.id) {
          return yield* OAuthError.of("invalid_grant", "The code was issued to another client.")
        }
        if (row.expires_at.getTime() <= Date.now()) {
          return yield* OAuthError.of("invalid_grant", "The code has expired.")
        }
        if (form.get("redirect_uri") !== null && form.get("redirect_uri") !== row.redirect_uri) {
          return yield* OAuthError.of("invalid_grant", "`redirect_uri` differs from the authorization request's.")
        }
        if (!pkceMatches(codeVerifier, row.code_challenge)) {
          return yield* OAuthError.of("invalid_grant", "The PKCE `code_verifier` does not match the challenge.")
        }
        yield* checkResource(form, row.resource)
        const grantId = newGrantId()
        return yield* Effect.gen(function*() {
          // the sign-in that approved it ended since (a password reset, single sign-on turned off)
          if (!(yield* repo.lockCode(hash))) {
            return yield* OAuthError.of(
              "invalid_grant",
              "The sign-in that approved this code has ended. Start the authorization again."
            )
          }
          yield* repo.insertGrant({
            id: grantId,
            client_id: client.id,
            organization_id: row.organization_id,
            user_id: row.user_id,
            resource: row.resource,
            scope: row.scope
          }, row.sign_in)
          yield* repo.attachGrant(hash, grantId)
          // a client now holds the person's access: recorded with the grant, as REVOKE_AUTHORIZATION ends it
          yield* audit.record({
            organizationId: row.organization_id,
            actor: { type: "user", id: row.user_id, key_id: null }
          }, {
            action: "CREATE_AUTHORIZATION",
            targets: [{
              type: "oauth_authorization",
              id: grantId,
              ...(client.name === null ? {} : { name: client.name })
            }],
            details: { client_id: client.id, resource: row.resource, scopes: row.scope.split(" ") }
          })
          return yield* issueTokens(grantId, row.scope, row.scope)
        }).pipe(transaction)
      })

    /**
     * A refresh is checked in full before its token is used: a refused request (wrong client, `resource` or
     * scope) leaves the token as it was, so the client's corrected retry is not taken for a reuse. Only a
     * token that was really rotated out, coming back, revokes the grant.
     */
    const refreshToken = (client: ClientRow, form: URLSearchParams) =>
      Effect.gen(function*() {
        const token = form.get("refresh_token")
        if (token === null) return yield* OAuthError.of("invalid_request", "Send `refresh_token`.")
        const hash = hashOf(token)
        const found = yield* repo.findRefreshToken(hash)
        if (found === undefined) return yield* OAuthError.of("invalid_grant", "Unknown refresh token.")
        const grant = yield* repo.findGrant(found.grant_id)
        if (grant === undefined || grant.client_id !== client.id) {
          return yield* OAuthError.of("invalid_grant", "The refresh token was issued to another client.")
        }
        const reused = Effect.zipRight(
          revokeFamily(grant.id),
          OAuthError.of("invalid_grant", "This refresh token was already used; the authorization is revoked.")
        )
        // a rotated-out refresh token came back: one of its holders is not the client, so end the family
        if (found.used) return yield* reused
        if (grant.revoked_at !== null) return yield* OAuthError.of("invalid_grant", "The authorization was revoked.")
        if (found.expires_at.getTime() <= Date.now()) {
          return yield* OAuthError.of("invalid_grant", "The refresh token has expired.")
        }
        yield* checkResource(form, grant.resource)
        const requested = (form.get("scope") ?? "").split(" ").filter((s) => s !== "")
        const granted = grant.scope.split(" ")
        if (requested.some((s) => !granted.includes(s))) {
          return yield* OAuthError.of("invalid_scope", "A refresh cannot widen the granted scope.")
        }
        // the use and the new tokens commit together; a concurrent refresh that used it first is a reuse
        const issued = yield* Effect.gen(function*() {
          if (!(yield* repo.consumeRefreshToken(hash))) return undefined
          // asked in any order, given in the grant's
          const scope = requested.length === 0 ? grant.scope : granted.filter((s) => requested.includes(s)).join(" ")
          return yield* issueTokens(grant.id, scope, grant.scope)
        }).pipe(transaction)
        return issued === undefined ? yield* reused : issued
      })

    /** `/oauth/token`: the code exchange and refresh. */
    const token = Effect.fn("AuthorizationServer.token")(
      function*(authorization: string | undefined, form: URLSearchParams) {
        yield* singleParameters(form)
        const client = yield* clients.authenticate(authorization, form)
        switch (form.get("grant_type")) {
          case "authorization_code":
            return yield* authorizationCode(client, form)
          case "refresh_token":
            return yield* refreshToken(client, form)
          case null:
            return yield* OAuthError.of("invalid_request", "Send `grant_type`.")
          default:
            return yield* OAuthError.of("unsupported_grant_type", "Use `authorization_code` or `refresh_token`.")
        }
      }
    )

    /** `/oauth/revoke` (RFC 7009): a refresh token ends its whole grant; unknown tokens are not an error. */
    const revoke = Effect.fn("AuthorizationServer.revoke")(
      function*(authorization: string | undefined, form: URLSearchParams) {
        yield* singleParameters(form)
        const client = yield* clients.authenticate(authorization, form)
        const token = form.get("token")
        if (token === null) return yield* OAuthError.of("invalid_request", "Send `token`.")
        const hash = hashOf(token)
        const found = yield* repo.findToken(hash)
        if (found === undefined) return
        const grant = yield* repo.findGrant(found.grant_id)
        if (grant === undefined || grant.client_id !== client.id) return
        if (found.kind === "refresh") yield* revokeFamily(grant.id)
        else {
          yield* repo.expireToken(hash)
          yield* verifier.forgetGrant(grant.id)
        }
      }
    )

    return { validate, approve, deny, token, revoke, revokeFamily } as const
  }),
  dependencies: [OAuthRepo.Default, Clients.Default, TokenVerifier.Default, AuditLog.Default]
}) {}
