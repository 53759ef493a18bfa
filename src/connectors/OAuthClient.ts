import { Data, Duration, Effect } from "effect"
import { request } from "undici"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Egress } from "./Egress.js"

export interface TokenSet {
  readonly access_token: string
  readonly refresh_token: string | undefined
  /** Epoch ms; undefined when the server gave no lifetime. */
  readonly expires_at: number | undefined
}

export class TokenEndpointError extends Data.TaggedError("TokenEndpointError")<{
  readonly message: string
  /** The server said the grant is no longer valid (RFC 6749 `invalid_grant`): sign in again. */
  readonly invalidGrant: boolean
  /**
   * Why a call that needs the token cannot be made now, in the invoke's own codes: the endpoint refused or
   * answered no token (`upstream_unreachable`), did not answer in time, or is an internal address.
   */
  readonly code: "egress_refused" | "upstream_unreachable" | "upstream_timeout"
}> {}

/** Longest wait for a token endpoint; never longer than a connector call may take. */
const TOKEN_TIMEOUT_MS = 30_000

export interface ClientCredentials {
  readonly client_id: string
  readonly client_secret: string
  /** How the client authenticates at the token endpoint; the RFC's default, client_secret_basic, when absent. */
  readonly token_endpoint_auth_method?: "client_secret_basic" | "client_secret_post" | undefined
}

/** The token endpoint side of OAuth 2.0 (RFC 6749), reached through the egress guard. */
export class OAuthClient extends Effect.Service<OAuthClient>()("connectors/OAuthClient", {
  effect: Effect.gen(function*() {
    const egress = yield* Egress
    const timeoutMs = Math.min(
      TOKEN_TIMEOUT_MS,
      Math.max(1, Duration.toMillis((yield* SwitchyardConfig).connectorTimeout))
    )

    // the deadline is Effect's: interrupting aborts `signal`. (AbortSignal.any over AbortSignal.timeout is not
    // kept alive by Node 20: once collected, the timeout never fires and a silent endpoint holds the call.)
    const token = (tokenUrl: string, client: ClientCredentials, form: Record<string, string>) =>
      Effect.tryPromise({
        try: async (signal) => {
          const post = client.token_endpoint_auth_method === "client_secret_post"
          const response = await request(tokenUrl, {
            method: "POST",
            dispatcher: egress.dispatcher,
            signal,
            headers: {
              "content-type": "application/x-www-form-urlencoded",
              accept: "application/json",
              // client_secret_basic, the RFC's default; ids and secrets are form-encoded first (RFC 6749 §2.3.1)
              ...(post ? {} : {
                authorization: "Basic " +
                  Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`)
                    .toString("base64")
              })
            },
            // client_secret_post: the client in the form instead (RFC 6749 §2.3.1)
            body: new URLSearchParams(
              post ? { ...form, client_id: client.client_id, client_secret: client.client_secret } : form
            ).toString()
          })
          const text = await response.body.text()
          let body: any
          try {
            body = JSON.parse(text)
          } catch {
            body = Object.fromEntries(new URLSearchParams(text))
          }
          if (response.statusCode >= 400 || typeof body.access_token !== "string") {
            const error = typeof body.error === "string" ? body.error : undefined
            throw new TokenEndpointError({
              message: error !== undefined || response.statusCode >= 400
                ? `the token endpoint refused: ${error ?? `HTTP ${response.statusCode}`}${
                  body.error_description ? ` (${body.error_description})` : ""
                }`
                : `the token endpoint answered HTTP ${response.statusCode} without an access_token`,
              invalidGrant: error === "invalid_grant" || error === "invalid_client" || error === "unauthorized_client",
              code: "upstream_unreachable"
            })
          }
          const lifetime = Number(body.expires_in)
          return {
            access_token: body.access_token as string,
            refresh_token: typeof body.refresh_token === "string" ? body.refresh_token : undefined,
            expires_at: Number.isFinite(lifetime) && lifetime > 0 ? Date.now() + lifetime * 1000 : undefined
          } satisfies TokenSet
        },
        catch: (e) =>
          e instanceof TokenEndpointError
            ? e
            : new TokenEndpointError({
              message: `the token endpoint is unreachable: ${egress.explain(e)}`,
              invalidGrant: false,
              code: egress.refusal(e) === undefined ? "upstream_unreachable" : "egress_refused"
            })
      }).pipe(Effect.timeoutFail({
        duration: timeoutMs,
        onTimeout: () =>
          new TokenEndpointError({
            message: `the token endpoint did not answer within ${timeoutMs / 1000} s`,
            invalidGrant: false,
            code: "upstream_timeout"
          })
      }))

    return {
      exchangeCode: (
        tokenUrl: string,
        client: ClientCredentials,
        code: string,
        redirectUri: string,
        verifier: string
      ) =>
        token(tokenUrl, client, {
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          code_verifier: verifier
        }),
      refresh: (tokenUrl: string, client: ClientCredentials, refreshToken: string) =>
        token(tokenUrl, client, { grant_type: "refresh_token", refresh_token: refreshToken }),
      clientCredentials: (tokenUrl: string, client: ClientCredentials, scopes: ReadonlyArray<string>) =>
        token(tokenUrl, client, {
          grant_type: "client_credentials",
          ...(scopes.length > 0 ? { scope: scopes.join(" ") } : {})
        })
    } as const
  }),
  dependencies: []
}) {}
