import { Entity } from "@effect/cluster"
import { Effect, Option, Redacted } from "effect"
import { AppliedCredentials, ConnectionEntity, ConnectionUnusable } from "../../cluster/ConnectionEntity.js"
import type { ConnectionId } from "../../schema/Ids.js"
import { singleFlight } from "../support/SingleFlight.js"
import { type ConnectionRow, ConnectorRepo } from "./ConnectorRepo.js"
import { CredentialVault } from "./CredentialVault.js"
import { OAuthClient, type TokenEndpointError, type TokenSet } from "./OAuthClient.js"
import { applySecret, oauthFlow, type StoredSecret } from "./SecuritySchemes.js"

/** Refresh this long before a token expires, so calls in flight never carry an expired one. */
const REFRESH_MARGIN_MS = 60_000
/** Static credentials are re-read this often, so an edit on another node is picked up. */
const STATIC_TTL_MS = 30_000

export const sealingContext = (row: Pick<ConnectionRow, "organization_id" | "connector_id" | "id">) =>
  [row.organization_id, row.connector_id, row.id] as const

const redactAll = (record: Record<string, string>) =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, Redacted.make(v)]))

export const ConnectionEntityLive = ConnectionEntity.toLayer(
  Effect.gen(function*() {
    const connectionId = (yield* Entity.CurrentAddress).entityId as string as ConnectionId
    const repo = yield* ConnectorRepo
    const vault = yield* CredentialVault
    const oauth = yield* OAuthClient
    let cached: AppliedCredentials | undefined

    const unusable = (code: ConnectionUnusable["code"], message: string) => new ConnectionUnusable({ code, message })

    /** False when a PATCH replaced the credentials since `row` was read: what was worked out from them is moot. */
    const persist = (row: ConnectionRow, secret: StoredSecret, status: ConnectionRow["status"]) => {
      const { keyVersion, sealed } = vault.seal(secret, sealingContext(row))
      return repo.storeSecret(row.id, { sealed, keyVersion }, status, row.credentials)
    }

    const load = Effect.fn("Connection.load")(function*(staleToken: boolean) {
      // again when a PATCH replaced the credentials while they were used (`continue`): the call takes the new ones
      for (;;) {
        const row = yield* repo.findConnectionById(connectionId)
        if (row === undefined) return yield* unusable("connection_not_found", "This connection was deleted.")
        if (row.status === "pending_authorization") {
          return yield* unusable(
            "connection_pending_authorization",
            "Finish connecting first: open the connection's connector_page_url and sign in."
          )
        }
        const connector = yield* repo.findConnectorById(row.connector_id)
        if (connector === undefined) return yield* unusable("connection_not_found", "The connector was removed.")
        const flow = oauthFlow(connector.imported, row.security_scheme)
        // a client-credentials connection has no sign-in to redo: its client id or secret is what was refused
        const remedy = flow?.kind === "clientCredentials"
          ? "update its client credentials (PATCH the connection's `credentials`)"
          : "authorize it again (POST …/authorize)"
        if (row.status === "needs_reauthentication") {
          return yield* unusable(
            "connection_needs_reauthentication",
            `The connection's token could not be refreshed; ${remedy}.`
          )
        }
        let secret: StoredSecret = row.credentials === null
          ? { type: "none" }
          : yield* Effect.try({
            try: () => vault.open<StoredSecret>(row.credentials!, row.key_version ?? 1, sealingContext(row)),
            // a failure, not a defect: a defect would restart the entity and retry forever
            catch: (e) => unusable("connection_credentials_unreadable", (e as Error).message)
          })
        let expiresAt: number | null = Date.now() + STATIC_TTL_MS
        if (secret.type === "oauth2") {
          const fresh = secret.access_token !== undefined && !staleToken &&
            (secret.expires_at === undefined || secret.expires_at - Date.now() > REFRESH_MARGIN_MS)
          if (!fresh && flow !== undefined) {
            const client = {
              client_id: secret.client_id,
              client_secret: secret.client_secret,
              token_endpoint_auth_method: secret.token_endpoint_auth_method
            }
            const obtain: Effect.Effect<TokenSet, Pick<TokenEndpointError, "invalidGrant" | "code" | "message">> =
              flow.kind === "clientCredentials"
                ? oauth.clientCredentials(flow.tokenUrl, client, secret.scopes ?? [])
                : secret.refresh_token !== undefined
                ? oauth.refresh(flow.refreshUrl ?? flow.tokenUrl, client, secret.refresh_token)
                : Effect.fail({
                  invalidGrant: true,
                  code: "upstream_unreachable",
                  message: "no refresh token was issued"
                })
            const got = yield* Effect.either(obtain)
            if (got._tag === "Left") {
              const e = got.left
              // only a refused grant needs a person; an endpoint down or slow is the target failing, and passes
              if (!e.invalidGrant) {
                return yield* unusable(e.code, `Getting the connection's OAuth2 token failed: ${e.message}.`)
              }
              // credentials given meanwhile (the remedy, a PATCH) were not what was refused: the call tries them
              if (!(yield* persist(row, secret, "needs_reauthentication"))) continue
              return yield* unusable(
                "connection_needs_reauthentication",
                `Getting the connection's token failed (${e.message}); ${remedy}.`
              )
            }
            const tokens = got.right
            const refreshToken = tokens.refresh_token ?? secret.refresh_token
            const { expires_at: _, refresh_token: __, ...rest } = secret
            secret = {
              ...rest,
              access_token: tokens.access_token,
              ...(refreshToken === undefined ? {} : { refresh_token: refreshToken }),
              ...(tokens.expires_at === undefined ? {} : { expires_at: tokens.expires_at })
            }
            // not over credentials given meanwhile: the call gets their token instead
            if (!(yield* persist(row, secret, "active"))) continue
          }
          if (secret.type === "oauth2" && secret.expires_at !== undefined) {
            expiresAt = secret.expires_at - REFRESH_MARGIN_MS / 2
          }
        }
        const applied = applySecret(connector.imported, row.security_scheme, secret)
        return new AppliedCredentials({
          headers: redactAll(applied.headers),
          query: redactAll(applied.query),
          cookies: redactAll(applied.cookies),
          expires_at: expiresAt
        })
      }
    })

    /**
     * One load at a time, in the entity's scope: an ask whose node stopped waiting for it (ConnectionCredentials
     * asks again after a while) does not cut a slow token endpoint short, and the next ask joins it. An ask for a
     * refresh (a stale token) does not settle for a load that may not refresh: it waits for one, then loads; a
     * refresh under way serves any ask. A load begun before a Forget (an edit) keeps nothing of what it read.
     */
    const scope = yield* Effect.scope
    const loads = singleFlight<"plain" | "refresh", AppliedCredentials, ConnectionUnusable>((run) =>
      Effect.forkIn(run, scope)
    )
    let forgets = 0
    const loaded = (stale: boolean) =>
      Effect.suspend(() => {
        const before = forgets
        return Effect.tap(load(stale), (c) =>
          Effect.sync(() => {
            if (forgets === before) cached = c
          }))
      })
    const shared = (stale: boolean) =>
      stale
        ? Effect.zipRight(loads.settled("plain"), loads.run("refresh", loaded(true)))
        : loads.run(loads.running("refresh") ? "refresh" : "plain", loaded(false))

    return {
      Credentials: ({ payload }) =>
        Option.fromNullable(cached).pipe(
          Option.filter((c) => !payload.stale_token && (c.expires_at === null || c.expires_at > Date.now())),
          Option.match({ onSome: Effect.succeed, onNone: () => shared(payload.stale_token) })
        ),
      Forget: () =>
        Effect.sync(() => {
          forgets++
          cached = undefined
          loads.forget("plain")
          loads.forget("refresh")
        })
    }
  }),
  { maxIdleTime: "10 minutes" }
)
