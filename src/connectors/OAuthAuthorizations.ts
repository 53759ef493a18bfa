import { Data, Effect } from "effect"
import * as Crypto from "node:crypto"
import type { ConnectionId } from "../../schema/Ids.js"
import { AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ConnectionCredentials } from "./ConnectionCredentials.js"
import { sealingContext } from "./ConnectionEntityLive.js"
import { type ConnectionRow, ConnectorRepo } from "./ConnectorRepo.js"
import { CredentialVault } from "./CredentialVault.js"
import { OAuthClient } from "./OAuthClient.js"
import { oauthFlow, type StoredSecret } from "./SecuritySchemes.js"

const LIFETIME_MS = 30 * 60_000

export class AuthorizationFailed extends Data.TaggedError("AuthorizationFailed")<{ readonly message: string }> {}

const hashState = (state: string) => Crypto.createHash("sha256").update(state).digest()

/**
 * OAuth2 authorization-code sign-in for connections (RFC 6749 + PKCE): the connection's
 * `connector_page_url` starts it in the user's browser; our callback exchanges the code and stores the
 * tokens sealed. The state is random, single-use, expires, and is stored only as a hash.
 */
export class OAuthAuthorizations extends Effect.Service<OAuthAuthorizations>()("connectors/OAuthAuthorizations", {
  effect: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const repo = yield* ConnectorRepo
    const vault = yield* CredentialVault
    const oauth = yield* OAuthClient
    const credentials = yield* ConnectionCredentials
    const audit = yield* AuditLog
    const callbackUrl = `${config.baseUrl}/oauth/connections/callback`

    const begin = (row: ConnectionRow) =>
      Effect.gen(function*() {
        const state = Crypto.randomBytes(32).toString("base64url")
        const verifier = Crypto.randomBytes(32).toString("base64url")
        const sealed = vault.seal({ verifier }, [row.id, "authorization"])
        yield* repo.insertAuthorization({
          stateHash: hashState(state),
          connectionId: row.id,
          sealed: sealed.sealed,
          keyVersion: sealed.keyVersion,
          expiresAt: new Date(Date.now() + LIFETIME_MS)
        })
        return `${config.baseUrl}/oauth/connections/start?state=${state}`
      })

    const load = (connectionId: ConnectionId) =>
      Effect.gen(function*() {
        const row = yield* repo.findConnectionById(connectionId)
        const connector = row === undefined ? undefined : yield* repo.findConnectorById(row.connector_id)
        const flow = connector === undefined ? undefined : oauthFlow(connector.imported, row!.security_scheme)
        if (row === undefined || flow?.kind !== "authorizationCode" || row.credentials === null) {
          return yield* new AuthorizationFailed({ message: "This connection no longer signs in through OAuth2." })
        }
        const secret = vault.open<StoredSecret>(row.credentials, row.key_version ?? 1, sealingContext(row))
        if (secret.type !== "oauth2") {
          return yield* new AuthorizationFailed({ message: "This connection has no OAuth2 client." })
        }
        return { row, flow, secret }
      })

    /** The provider's authorization URL for this sign-in. */
    const start = Effect.fn("OAuthAuthorizations.start")(function*(state: string) {
      const found = yield* repo.findAuthorization(hashState(state))
      if (found === undefined || found.used_at !== null || found.expires_at.getTime() < Date.now()) {
        return yield* new AuthorizationFailed({
          message: "This sign-in link is unknown, used or expired. Ask for a new one."
        })
      }
      const { flow, secret } = yield* load(found.connection_id)
      const { verifier } = vault.open<{ verifier: string }>(found.sealed, found.key_version, [
        found.connection_id,
        "authorization"
      ])
      const url = new URL(flow.authorizationUrl)
      url.searchParams.set("response_type", "code")
      url.searchParams.set("client_id", secret.client_id)
      url.searchParams.set("redirect_uri", callbackUrl)
      url.searchParams.set("state", state)
      url.searchParams.set("code_challenge", Crypto.createHash("sha256").update(verifier).digest("base64url"))
      url.searchParams.set("code_challenge_method", "S256")
      const scopes = secret.scopes ?? Object.keys(flow.scopes)
      if (scopes.length > 0) url.searchParams.set("scope", scopes.join(" "))
      return url.toString()
    })

    /** The provider sent the browser back: exchange the code, store the tokens, activate the connection. */
    const complete = Effect.fn("OAuthAuthorizations.complete")(
      function*(params: { code?: string; state?: string; error?: string; error_description?: string }) {
        if (params.state === undefined) {
          return yield* new AuthorizationFailed({ message: "The provider's answer has no state." })
        }
        const found = yield* repo.consumeAuthorization(hashState(params.state))
        if (found === undefined) {
          return yield* new AuthorizationFailed({
            message: "This sign-in is unknown, already completed or expired. Start again."
          })
        }
        if (params.error !== undefined || params.code === undefined) {
          return yield* new AuthorizationFailed({
            message: `The provider refused the sign-in: ${params.error ?? "no code"}${
              params.error_description ? ` (${params.error_description})` : ""
            }.`
          })
        }
        const { flow, row, secret } = yield* load(found.connection_id)
        const { verifier } = vault.open<{ verifier: string }>(found.sealed, found.key_version, [
          found.connection_id,
          "authorization"
        ])
        const tokens = yield* oauth.exchangeCode(flow.tokenUrl, secret, params.code, callbackUrl, verifier).pipe(
          Effect.mapError((e) => new AuthorizationFailed({ message: `Exchanging the code failed: ${e.message}.` }))
        )
        const stored: StoredSecret = {
          type: "oauth2",
          client_id: secret.client_id,
          client_secret: secret.client_secret,
          ...(secret.scopes === undefined ? {} : { scopes: secret.scopes }),
          ...(secret.token_endpoint_auth_method === undefined ?
            {} :
            { token_endpoint_auth_method: secret.token_endpoint_auth_method }),
          access_token: tokens.access_token,
          ...(tokens.refresh_token === undefined ? {} : { refresh_token: tokens.refresh_token }),
          ...(tokens.expires_at === undefined ? {} : { expires_at: tokens.expires_at })
        }
        const sealed = vault.seal(stored, sealingContext(row))
        // new credentials for the connection: the browser that came back is all we know of who (its address).
        // Only over the client it signed in with: credentials a PATCH gave meanwhile stand, for their own sign-in.
        const kept = yield* repo.storeSecret(
          row.id,
          { sealed: sealed.sealed, keyVersion: sealed.keyVersion },
          "active",
          row.credentials
        ).pipe(
          audit.recorded({
            organizationId: row.organization_id,
            actor: { type: "system", id: "connection_oauth_callback", key_id: null }
          }, (kept) =>
            kept
              ? {
                action: "AUTHORIZE_CONNECTION",
                targets: [{ type: "connection", id: row.id, name: row.name }],
                details: { scopes: secret.scopes ?? Object.keys(flow.scopes) }
              }
              : undefined)
        )
        if (!kept) {
          return yield* new AuthorizationFailed({
            message: "The connection's credentials were changed while you signed in: sign in again with its new link."
          })
        }
        yield* credentials.forget(row.id)
        return { connectionName: row.name }
      }
    )

    return { begin, start, complete } as const
  }),
  dependencies: [ConnectorRepo.Default, AuditLog.Default]
}) {}
