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
import { IdentityRepo } from "../identity/IdentityRepo.js"
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
    const identity = yield* IdentityRepo

    const keyOf = (organizationId: OrganizationId, provider: HttpProvider, row: ModelProviderRow) =>
      row.api_key === null
        ? undefined
        : vault.open<string>(row.api_key, row.key_version ?? 1, [organizationId, "model-provider", provider])

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
      const baseUrl = input.base_url ?? null
      return yield* transaction(Effect.gen(function*() {
        // the organization locked from the read of the settings to their write (there may be no row to lock
        // yet): two PUTs at once each record, as their `before`, what the other left
        yield* identity.lockOrganization(principal.organizationId)
        const current = yield* repo.find(principal.organizationId, provider)
        // a key that no longer opens (SWITCHYARD_SECRET_KEY changed) counts as different: a PUT replaces it
        const currentKey = current === undefined
          ? undefined
          : yield* Effect.orElseSucceed(
            Effect.try(() => keyOf(principal.organizationId, provider, current)),
            () => null
          )
        const keyChanged = input.api_key !== currentKey
        // what it holds already: not written (`updated_at` stays), nothing audited
        if (current !== undefined && current.base_url === baseUrl && !keyChanged) return present(current)
        const sealed = input.api_key === undefined
          ? null
          : vault.seal(input.api_key, [principal.organizationId, "model-provider", provider])
        const row = yield* repo.upsert(principal.organizationId, provider, {
          baseUrl,
          apiKey: sealed?.sealed ?? null,
          keyVersion: sealed?.keyVersion ?? null
        })
        yield* audit.record(principal, {
          action: "UPDATE_MODEL_PROVIDER",
          targets: [{ type: "model_provider", id: provider }],
          // never the key itself: whether one is set, and whether it changed
          details: {
            base_url: baseUrl,
            api_key_set: input.api_key !== undefined,
            api_key_changed: keyChanged,
            before: current === undefined ? null : { base_url: current.base_url, api_key_set: current.api_key !== null }
          }
        })
        return present(row)
      }))
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
            apiKey: keyOf(organizationId, provider, row)
          }
        )
      )

    return { set, list, remove, settingsFor } as const
  }),
  dependencies: [ModelProviderRepo.Default, IdentityRepo.Default, AuditLog.Default]
}) {}
