import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { ModelProviderSettings } from "../../schema/Agents.js"
import { NotFound } from "../../schema/Errors.js"
import type { OrganizationId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog } from "../audit/AuditLog.js"
import { CredentialVault } from "../connectors/CredentialVault.js"
import { transactionIn } from "../db/Transaction.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { isHttpUrl } from "../support/HttpUrl.js"
import { invalidField } from "../support/Issues.js"
import { type HttpProvider, ModelProviderRepo, type ModelProviderRow } from "./ModelProviderRepo.js"

export type { HttpProvider } from "./ModelProviderRepo.js"

const present = (row: ModelProviderRow) =>
  new ModelProviderSettings({
    provider: row.provider,
    base_url: row.base_url,
    has_api_key: row.api_key !== null,
    updated_at: row.updated_at
  })

/** An organization's own model provider settings: base URL and API key (sealed like connection credentials). */
export class ModelProviders extends Effect.Service<ModelProviders>()("agents/ModelProviders", {
  effect: Effect.gen(function*() {
    const repo = yield* ModelProviderRepo
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const vault = yield* CredentialVault
    const audit = yield* AuditLog

    const set = Effect.fn("ModelProviders.set")(function*(
      principal: Principal,
      provider: HttpProvider,
      input: { readonly api_key?: string | undefined; readonly base_url?: string | undefined }
    ) {
      yield* requireOrganizationKey(principal, Policy.configureModelProviders)
      if (
        input.base_url !== undefined &&
        !isHttpUrl(input.base_url)
      ) {
        return yield* invalidField("base_url", "must be an absolute http(s) URL.")
      }
      const sealed = input.api_key === undefined
        ? null
        : vault.seal(input.api_key, [principal.organizationId, "model-provider", provider])
      const row = yield* transaction(
        repo.upsert(principal.organizationId, provider, {
          baseUrl: input.base_url ?? null,
          apiKey: sealed?.sealed ?? null,
          keyVersion: sealed?.keyVersion ?? null
        }).pipe(
          Effect.tap(() =>
            audit.record(principal, {
              action: "UPDATE_MODEL_PROVIDER",
              targets: [{ type: "model_provider", id: provider }],
              // never the key itself: whether one is set
              details: { base_url: input.base_url ?? null, api_key_set: input.api_key !== undefined }
            })
          )
        )
      )
      return present(row)
    })

    const list = Effect.fn("ModelProviders.list")(function*(principal: Principal) {
      const rows = yield* repo.list(principal.organizationId)
      return rows.map(present)
    })

    const remove = Effect.fn("ModelProviders.remove")(function*(principal: Principal, provider: HttpProvider) {
      yield* requireOrganizationKey(principal, Policy.configureModelProviders)
      const removed = yield* transaction(Effect.gen(function*() {
        const removed = yield* repo.remove(principal.organizationId, provider)
        if (removed) {
          yield* audit.record(principal, {
            action: "DELETE_MODEL_PROVIDER",
            targets: [{ type: "model_provider", id: provider }]
          })
        }
        return removed
      }))
      if (!removed) return yield* NotFound.of("Model provider settings", provider)
    })

    /** For running tasks: the organization's settings, key opened. */
    const settingsFor = (organizationId: OrganizationId, provider: HttpProvider) =>
      repo.find(organizationId, provider).pipe(
        Effect.map((row) =>
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
  dependencies: [ModelProviderRepo.Default, AuditLog.Default]
}) {}
