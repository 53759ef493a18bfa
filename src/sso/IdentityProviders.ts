import { Effect } from "effect"
import * as client from "openid-client"
import { fetch as undiciFetch } from "undici"
import type { OrganizationId } from "../../schema/Ids.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { Egress } from "../connectors/Egress.js"
import type { SsoRow } from "./SsoRepo.js"

const DISCOVERY_TIMEOUT_SECONDS = 10
// metadata and signing keys change rarely; re-discovering now and then picks up key rotation's new jwks_uri
const CACHE_MS = 10 * 60 * 1000

/** Why an issuer cannot be used: not reachable at all, or it answers but not as an OIDC provider. */
export class IssuerProblem {
  readonly _tag = "IssuerProblem"
  constructor(readonly kind: "unreachable" | "not_oidc", readonly message: string) {}
}

const NETWORK_CODES = /^(E[A-Z]+|UND_ERR_.*)$/

/** Walks an error's causes for a network failure (as opposed to an answer that is not OIDC). */
const networkFailure = (error: unknown): string | undefined => {
  let e: any = error
  for (let depth = 0; e !== undefined && e !== null && depth < 8; depth++, e = e.cause) {
    if (e.name === "EgressRefused" || e.name === "TimeoutError" || e.name === "AbortError") return e.message
    if (typeof e.code === "string" && NETWORK_CODES.test(e.code) && !e.code.startsWith("ERR_")) {
      return `${e.code}${e.message ? `: ${e.message}` : ""}`
    }
    if (e instanceof TypeError && e.message === "fetch failed" && e.cause === undefined) return e.message
  }
  return undefined
}

const describe = (error: unknown) => {
  const e = error as { message?: string; cause?: { message?: string } }
  return e?.message ?? String(error)
}

/**
 * Organizations' identity providers as openid-client configurations: discovered through the egress guard
 * (an issuer on an internal address needs SWITCHYARD_EGRESS_ALLOW), ID token signatures checked against the
 * provider's JWKS, and cached per organization and settings version.
 */
export class IdentityProviders extends Effect.Service<IdentityProviders>()("sso/IdentityProviders", {
  effect: Effect.gen(function*() {
    const egress = yield* Egress
    const vault = yield* CredentialVault
    const cache = new Map<OrganizationId, { version: number; at: number; config: client.Configuration }>()

    // no redirects: a discovery document that moves is not where the issuer says it is
    const viaEgress: client.CustomFetch = (url, options) =>
      undiciFetch(url, { ...(options as object), dispatcher: egress.dispatcher, redirect: "manual" }) as never

    const discover = (issuer: string, clientId: string, clientSecret: string) =>
      Effect.tryPromise({
        try: async () => {
          const insecure = issuer.startsWith("http://")
          const config = await client.discovery(new URL(issuer), clientId, undefined, undefined, {
            [client.customFetch]: viaEgress,
            timeout: DISCOVERY_TIMEOUT_SECONDS,
            algorithm: "oidc",
            execute: insecure ? [client.allowInsecureRequests] : []
          })
          const meta = config.serverMetadata()
          // the spec's default method is client_secret_basic; some providers offer only _post
          const methods = meta.token_endpoint_auth_methods_supported
          const auth = methods === undefined || methods.includes("client_secret_basic")
            ? client.ClientSecretBasic(clientSecret)
            : client.ClientSecretPost(clientSecret)
          const configured = new client.Configuration(meta, clientId, undefined, auth)
          configured[client.customFetch] = viaEgress
          configured.timeout = DISCOVERY_TIMEOUT_SECONDS
          if (insecure) client.allowInsecureRequests(configured)
          client.enableNonRepudiationChecks(configured)
          return configured
        },
        catch: (e) => {
          const network = networkFailure(e)
          return network !== undefined
            ? new IssuerProblem("unreachable", `The issuer ${issuer} cannot be reached: ${egress.explain(e)}.`)
            : new IssuerProblem(
              "not_oidc",
              `${issuer}/.well-known/openid-configuration is not an OpenID Connect provider's metadata: ${describe(e)}.`
            )
        }
      }).pipe(
        Effect.flatMap((config) => {
          const meta = config.serverMetadata()
          const missing = (["authorization_endpoint", "token_endpoint", "jwks_uri"] as const).filter((k) =>
            typeof meta[k] !== "string"
          )
          if (missing.length > 0) {
            return Effect.fail(
              new IssuerProblem("not_oidc", `The issuer's metadata has no ${missing.join(", ")}.`)
            )
          }
          if (meta.response_types_supported !== undefined && !meta.response_types_supported.includes("code")) {
            return Effect.fail(
              new IssuerProblem("not_oidc", "The issuer does not support the authorization code flow.")
            )
          }
          const pkce = meta.code_challenge_methods_supported
          if (pkce !== undefined && !pkce.includes("S256")) {
            return Effect.fail(new IssuerProblem("not_oidc", "The issuer does not support PKCE with S256."))
          }
          return Effect.succeed(config)
        })
      )

    const secretContext = (organizationId: OrganizationId) => ["sso", organizationId, "client_secret"]
    const sealSecret = (organizationId: OrganizationId, secret: string) =>
      vault.seal(secret, secretContext(organizationId))
    const openSecret = (row: SsoRow) =>
      vault.open<string>(row.client_secret, row.secret_key_version, secretContext(row.organization_id))

    /** The configuration for an organization's stored settings (discovered at most every 10 minutes). */
    const configuration = (row: SsoRow) =>
      Effect.suspend(() => {
        const cached = cache.get(row.organization_id)
        const version = row.updated_at.getTime()
        if (cached !== undefined && cached.version === version && Date.now() - cached.at < CACHE_MS) {
          return Effect.succeed(cached.config)
        }
        return Effect.tap(
          discover(row.issuer, row.client_id, openSecret(row)),
          (config) => Effect.sync(() => cache.set(row.organization_id, { version, at: Date.now(), config }))
        )
      })

    const forget = (organizationId: OrganizationId) => Effect.sync(() => cache.delete(organizationId))

    return { discover, configuration, forget, sealSecret, openSecret } as const
  }),
  dependencies: [Egress.Default, CredentialVault.Default]
}) {}
