import { PgClient } from "@effect/sql-pg"
import { Effect } from "effect"
import type { OrganizationId } from "../../schema/Ids.js"

export type HttpProvider = "openai" | "openai-chat" | "anthropic"

export interface ModelProviderRow {
  readonly provider: HttpProvider
  readonly base_url: string | null
  readonly api_key: Uint8Array | null
  readonly key_version: number | null
  readonly updated_at: Date
}

/** An organization's model provider settings, one row per provider; a failed statement is a defect. */
export class ModelProviderRepo extends Effect.Service<ModelProviderRepo>()("agents/ModelProviderRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const columns = sql`provider, base_url, api_key, key_version, updated_at`

    const upsert = (
      organizationId: OrganizationId,
      provider: HttpProvider,
      settings: {
        readonly baseUrl: string | null
        readonly apiKey: Uint8Array | null
        readonly keyVersion: number | null
      }
    ) =>
      sql<ModelProviderRow>`
        INSERT INTO model_providers (organization_id, provider, base_url, api_key, key_version)
        VALUES (${organizationId}, ${provider}, ${settings.baseUrl}, ${settings.apiKey}, ${settings.keyVersion})
        ON CONFLICT (organization_id, provider) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
          key_version = excluded.key_version, updated_at = now()
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row!), Effect.orDie)

    const list = (organizationId: OrganizationId) =>
      sql<ModelProviderRow>`
        SELECT ${columns} FROM model_providers WHERE organization_id = ${organizationId} ORDER BY provider`.pipe(
        Effect.orDie
      )

    const find = (organizationId: OrganizationId, provider: HttpProvider) =>
      sql<ModelProviderRow>`
        SELECT ${columns} FROM model_providers WHERE organization_id = ${organizationId} AND provider = ${provider}`
        .pipe(Effect.map(([row]): ModelProviderRow | undefined => row), Effect.orDie)

    /** `false` when there were no settings. */
    const remove = (organizationId: OrganizationId, provider: HttpProvider) =>
      sql`
        DELETE FROM model_providers WHERE organization_id = ${organizationId} AND provider = ${provider}
        RETURNING provider`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    return { upsert, list, find, remove } as const
  })
}) {}
