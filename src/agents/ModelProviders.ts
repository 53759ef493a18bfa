import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import { ModelProviderSettings } from "../../schema/Agents.js"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import type { OrganizationId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog } from "../audit/AuditLog.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { requireRole } from "../identity/IdentityPolicy.js"
import { isHttpUrl } from "../support/HttpUrl.js"

export type HttpProvider = "openai" | "openai-chat" | "anthropic"

interface Row {
  readonly provider: HttpProvider
  readonly base_url: string | null
  readonly api_key: Uint8Array | null
  readonly key_version: number | null
  readonly updated_at: Date
}

const present = (row: Row) =>
  new ModelProviderSettings({
    provider: row.provider,
    base_url: row.base_url,
    has_api_key: row.api_key !== null,
    updated_at: row.updated_at
  })

/** An organization's own model provider settings: base URL and API key (sealed like connection credentials). */
export class ModelProviders extends Effect.Service<ModelProviders>()("agents/ModelProviders", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const vault = yield* CredentialVault
    const audit = yield* AuditLog

    const set = Effect.fn("ModelProviders.set")(function*(
      principal: Principal,
      provider: HttpProvider,
      input: { readonly api_key?: string | undefined; readonly base_url?: string | undefined }
    ) {
      yield* requireRole(principal, "admin", "configure model providers")
      if (
        input.base_url !== undefined &&
        !isHttpUrl(input.base_url)
      ) {
        return yield* BadRequest.of("`base_url` must be an absolute http(s) URL.", undefined, "validation_failed")
      }
      const sealed = input.api_key === undefined
        ? null
        : vault.seal(input.api_key, [principal.organizationId, "model-provider", provider])
      const [row] = yield* sql.withTransaction(sql<Row>`
        INSERT INTO model_providers (organization_id, provider, base_url, api_key, key_version)
        VALUES (${principal.organizationId}, ${provider}, ${input.base_url ?? null}, ${sealed?.sealed ?? null}, ${
        sealed?.keyVersion ?? null
      })
        ON CONFLICT (organization_id, provider) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
          key_version = excluded.key_version, updated_at = now()
        RETURNING provider, base_url, api_key, key_version, updated_at`.pipe(
        Effect.tap(() =>
          audit.record(principal, {
            action: "UPDATE_MODEL_PROVIDER",
            targets: [{ type: "model_provider", id: provider }],
            // never the key itself: whether one is set
            details: { base_url: input.base_url ?? null, api_key_set: input.api_key !== undefined }
          })
        )
      ))
      return present(row!)
    })

    const list = Effect.fn("ModelProviders.list")(function*(principal: Principal) {
      const rows = yield* sql<Row>`
        SELECT provider, base_url, api_key, key_version, updated_at FROM model_providers
        WHERE organization_id = ${principal.organizationId} ORDER BY provider`
      return rows.map(present)
    })

    const remove = Effect.fn("ModelProviders.remove")(function*(principal: Principal, provider: HttpProvider) {
      yield* requireRole(principal, "admin", "configure model providers")
      const rows = yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql`
          DELETE FROM model_providers WHERE organization_id = ${principal.organizationId} AND provider = ${provider}
          RETURNING provider`
        if (rows.length > 0) {
          yield* audit.record(principal, {
            action: "DELETE_MODEL_PROVIDER",
            targets: [{ type: "model_provider", id: provider }]
          })
        }
        return rows
      }))
      if (rows.length === 0) return yield* NotFound.of("Model provider settings", provider)
    })

    /** For running tasks: the organization's settings, key opened. */
    const settingsFor = (organizationId: OrganizationId, provider: HttpProvider) =>
      sql<Row>`
        SELECT provider, base_url, api_key, key_version, updated_at FROM model_providers
        WHERE organization_id = ${organizationId} AND provider = ${provider}`.pipe(
        Effect.map(([row]) =>
          row === undefined ? undefined : {
            baseUrl: row.base_url ?? undefined,
            apiKey: row.api_key === null
              ? undefined
              : vault.open<string>(row.api_key, row.key_version ?? 1, [organizationId, "model-provider", provider])
          }
        )
      )

    return { set, list, remove, settingsFor } as const
  }),
  dependencies: [AuditLog.Default]
}) {}
