import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as client from "openid-client"
import type { OrganizationId, UserId } from "../../schema/Ids.js"
import { hashOf, randomSecret } from "../oauth/Secrets.js"
import { RateLimits } from "../security/RateLimits.js"
import { IdentityProviders } from "./IdentityProviders.js"
import { ssoRedirectUri } from "./SsoPaths.js"
import { SsoProvisioning } from "./SsoProvisioning.js"
import { SsoRepo } from "./SsoRepo.js"

const LOGIN_TTL_MS = 10 * 60 * 1000
/** How far ahead of our clock an ID token's `iat` may be: clocks differ, by little. */
const CLOCK_SKEW_SECONDS = 5 * 60

/** A sign-in through the identity provider that cannot go on; `message` is shown to the person. */
export class SsoSignInRefused {
  readonly _tag = "SsoSignInRefused"
  constructor(readonly status: 400 | 403 | 502, readonly message: string) {}
}

export type SsoStart =
  | { readonly _tag: "Redirect"; readonly location: string; readonly browserToken: string }
  | { readonly _tag: "Notice"; readonly message: string }
  | { readonly _tag: "Limited"; readonly message: string; readonly retryAfter: number }
  | { readonly _tag: "Choose"; readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string }> }

export interface SsoSignedIn {
  readonly userId: UserId
  readonly organizationId: OrganizationId
  /** The provider that vouched for them: a session opens only while it is still the organization's. */
  readonly issuer: string
  readonly clientId: string
  /** The OAuth authorization request to continue with. */
  readonly request: string
}

/** openid-client wraps the precise reason (e.g. which claim did not match) in `cause`. */
const reasonOf = (e: unknown) => {
  // an OAuth error answer: its code and description say what the provider refused
  if (e instanceof client.ResponseBodyError) {
    return `the provider answered ${e.status} ${e.error}${e.error_description ? ` (${e.error_description})` : ""}`
  }
  const error = e as { message?: string; cause?: { message?: string } }
  const cause = error?.cause?.message
  return cause === undefined || cause === error.message ? String(error?.message ?? e) : `${error.message} (${cause})`
}

/** The token endpoint refused our client's authentication (RFC 6749 5.2: 401, or `invalid_client`). */
const clientRefused = (e: unknown) =>
  (e instanceof client.ResponseBodyError && (e.error === "invalid_client" || e.status === 401)) ||
  (e instanceof client.WWWAuthenticateChallengeError && e.status === 401)

/** `groups` as providers send it: a list of names, or one name. */
const groupsOf = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value)
    ? value.filter((g): g is string => typeof g === "string")
    : typeof value === "string"
    ? [value]
    : []

/**
 * Sign-in through an organization's OIDC provider: authorization code with PKCE, `state` bound to the browser
 * that started it and used once, `nonce` checked in the ID token, whose issuer, audience, expiry and signature
 * (JWKS) openid-client verifies.
 */
export class SsoSignIn extends Effect.Service<SsoSignIn>()("sso/SsoSignIn", {
  effect: Effect.gen(function*() {
    const repo = yield* SsoRepo
    const providers = yield* IdentityProviders
    const provisioning = yield* SsoProvisioning
    const redirectUri = yield* ssoRedirectUri
    const limits = yield* RateLimits

    const anyEnabled = repo.anyEnabled

    /** From the e-mail a person typed: the organization whose single sign-on admits its domain. */
    const start = Effect.fn("SsoSignIn.start")(
      function*(email: string, request: string, organizationId: string | undefined) {
        const at = email.trim().lastIndexOf("@")
        const domain = at < 0 ? "" : email.trim().slice(at + 1).toLowerCase()
        if (domain === "") {
          return { _tag: "Notice", message: "Enter your work e-mail address to sign in with single sign-on." } as const
        }
        const candidates = yield* repo.forDomain(domain)
        const chosen = candidates.length === 1
          ? candidates[0]
          : candidates.find((c) => c.organization_id === organizationId)
        if (candidates.length === 0) {
          return {
            _tag: "Notice",
            message:
              `Single sign-on is not set up for ${domain}. Sign in with your password, or ask your administrator.`
          } as const
        }
        if (chosen === undefined) {
          return {
            _tag: "Choose",
            organizations: candidates.map((c) => ({ id: c.organization_id, name: c.organization_name }))
          } as const
        }
        const config = yield* providers.configuration(chosen).pipe(Effect.either)
        if (config._tag === "Left") {
          yield* Effect.logWarning("identity provider unavailable", config.left.message)
          return {
            _tag: "Notice",
            message:
              `The identity provider of ${chosen.organization_name} cannot be reached right now. Try again later.`
          } as const
        }
        const refused = yield* limits.ssoStart
        if (refused !== undefined) {
          return { _tag: "Limited", message: refused.message, retryAfter: refused.retryAfter } as const
        }
        const state = client.randomState()
        const nonce = client.randomNonce()
        const verifier = client.randomPKCECodeVerifier()
        const browserToken = randomSecret()
        yield* repo.insertLogin(hashOf(state), {
          browser_hash: hashOf(browserToken),
          organization_id: chosen.organization_id,
          code_verifier: verifier,
          nonce,
          request,
          expires_at: new Date(Date.now() + LOGIN_TTL_MS)
        })
        const supported = config.right.serverMetadata().scopes_supported ?? []
        const scope = [
          "openid",
          "email",
          "profile",
          ...(supported.includes(chosen.group_claim) ? [chosen.group_claim] : [])
        ]
        const location = client.buildAuthorizationUrl(config.right, {
          redirect_uri: redirectUri,
          scope: scope.join(" "),
          state,
          nonce,
          code_challenge: yield* Effect.promise(() => client.calculatePKCECodeChallenge(verifier)),
          code_challenge_method: "S256",
          login_hint: email.trim()
        })
        return { _tag: "Redirect", location: location.href, browserToken } as const
      }
    )

    const refuse = (status: 400 | 403 | 502, message: string) => Effect.fail(new SsoSignInRefused(status, message))

    /** The provider sent the browser back: check everything, provision, and say who signed in where. */
    const finish = Effect.fn("SsoSignIn.finish")(
      function*(query: URLSearchParams, browserToken: string | undefined) {
        const state = query.get("state")
        if (state === null) return yield* refuse(400, "The identity provider's answer has no `state`. Start again.")
        const login = yield* repo.takeLogin(hashOf(state))
        if (login === undefined || login.expires_at.getTime() <= Date.now()) {
          return yield* refuse(
            400,
            "This sign-in is unknown, expired or already used (or its `state` was changed). Start again."
          )
        }
        if (
          browserToken === undefined || !Crypto.timingSafeEqual(hashOf(browserToken), Buffer.from(login.browser_hash))
        ) {
          return yield* refuse(400, "This sign-in was started in another browser. Start again from this one.")
        }
        const error = query.get("error")
        if (error !== null) {
          return yield* refuse(
            403,
            `The identity provider did not sign you in: ${query.get("error_description") ?? error}.`
          )
        }
        const row = yield* repo.find(login.organization_id)
        if (row === undefined || !row.enabled) {
          return yield* refuse(403, "Single sign-on is turned off for this organization.")
        }
        const config = yield* providers.configuration(row).pipe(
          Effect.mapError((problem) => new SsoSignInRefused(502, problem.message))
        )
        const callbackUrl = new URL(redirectUri)
        for (const [k, v] of query) callbackUrl.searchParams.append(k, v)
        const tokens = yield* Effect.tryPromise({
          try: () =>
            client.authorizationCodeGrant(config, callbackUrl, {
              pkceCodeVerifier: login.code_verifier,
              expectedState: state,
              expectedNonce: login.nonce,
              idTokenExpected: true
            }),
          catch: (e) => {
            // the token endpoint refusing our client is a setup error for an administrator, not the person's
            if (clientRefused(e)) {
              return new SsoSignInRefused(
                502,
                "The identity provider refused Switchyard's client credentials (invalid_client): an administrator " +
                  "must check the client id and client secret in the single sign-on settings (PUT /v1/sso)."
              )
            }
            return new SsoSignInRefused(403, `The identity provider's answer could not be verified: ${reasonOf(e)}.`)
          }
        })
        const claims: Record<string, unknown> = { ...tokens.claims()! }
        // openid-client refuses an `iat` long past, not one in the future: a token minted ahead of time (or by a
        // provider whose clock is off) would otherwise be good until its `exp`
        if (typeof claims.iat === "number" && claims.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) {
          return yield* refuse(
            403,
            "The identity provider's answer could not be verified: its ID token is issued in the future (`iat`), " +
              `more than ${CLOCK_SKEW_SECONDS / 60} minutes ahead of this server's clock. Check the clocks.`
          )
        }
        if (claims[row.group_claim] === undefined && config.serverMetadata().userinfo_endpoint !== undefined) {
          // many providers put groups only in userinfo; the subject must be the ID token's
          const info = yield* Effect.tryPromise(() =>
            client.fetchUserInfo(config, tokens.access_token, claims.sub as string)
          ).pipe(Effect.orElseSucceed(() => ({} as Record<string, unknown>)))
          for (const key of [row.group_claim, "email", "email_verified", "name"]) {
            if (claims[key] === undefined && info[key] !== undefined) claims[key] = info[key]
          }
        }
        const signedIn = yield* provisioning.signIn(row, {
          subject: claims.sub as string,
          email: typeof claims.email === "string" ? claims.email.trim() : undefined,
          emailVerified: claims.email_verified,
          name: typeof claims.name === "string" ? claims.name : null,
          groups: groupsOf(claims[row.group_claim])
        }).pipe(Effect.mapError((denied) => new SsoSignInRefused(403, denied.message)))
        return {
          userId: signedIn,
          organizationId: row.organization_id,
          issuer: row.issuer,
          clientId: row.client_id,
          request: login.request
        } satisfies SsoSignedIn
      }
    )

    /**
     * A web session that may act in the one organization it was opened for (refused if SSO was turned off, or
     * moved to another provider, since).
     */
    const openSession = (sessionHash: Uint8Array, signedIn: SsoSignedIn, expires: Date) =>
      Effect.flatMap(
        repo.insertSession(sessionHash, signedIn.userId, {
          organization_id: signedIn.organizationId,
          issuer: signedIn.issuer,
          client_id: signedIn.clientId
        }, expires),
        (opened) =>
          opened ? Effect.void : Effect.flatMap(repo.find(signedIn.organizationId), (row) =>
            refuse(
              403,
              row?.enabled === true
                ? "This organization's identity provider changed while you signed in. Start again."
                : "Single sign-on is turned off for this organization."
            ))
      )

    const sessionOrganization = (sessionHash: Uint8Array) => repo.sessionOrganization(sessionHash)

    return { anyEnabled, start, finish, openSession, sessionOrganization } as const
  }),
  dependencies: [SsoRepo.Default, IdentityProviders.Default, SsoProvisioning.Default, RateLimits.Default]
}) {}
