import { Effect, Option, Redacted, Schedule } from "effect"
import { Agent } from "undici"
import type { ModelConfig } from "../../schema/Agents.js"
import type { OrganizationId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Egress } from "../connectors/Egress.js"
import { observedModelCall } from "../observability/ModelCallObserver.js"
import { ModelProviders } from "./ModelProviders.js"
import { providerFor } from "./models/index.js"
import { ModelError, type ModelProvider, type ModelRequest, type ProviderConnection } from "./models/ModelProvider.js"
import { scripted } from "./models/Scripted.js"
import { makePriceTable } from "./Prices.js"

export type { ModelCallResult } from "./models/ModelProvider.js"

const notConfigured = (message: string) => new ModelError({ code: "model_not_configured", message, retryable: false })

/**
 * Where an agent's model calls go. The endpoint and key come from the agent (`model.base_url`), the
 * organization (`/v1/model-providers`) or the deployment (SWITCHYARD_* variables), in that order.
 * Endpoints set by users go through the egress guard; the operator's own (env) do not, so a local model
 * server configured by the operator works without opening internal egress to everyone.
 */
export class ModelGateway extends Effect.Service<ModelGateway>()("agents/ModelGateway", {
  scoped: Effect.gen(function*() {
    const config = yield* SwitchyardConfig
    const egress = yield* Egress
    const settings = yield* ModelProviders
    const prices = makePriceTable(config.modelPrices)
    const direct = yield* Effect.acquireRelease(
      Effect.sync(() => new Agent({ keepAliveTimeout: 30_000, connections: 64 })),
      (agent) => Effect.promise(() => agent.close().catch(() => undefined))
    )
    const deployment = {
      openai: { baseUrl: Option.some(config.models.openaiBaseUrl), apiKey: config.models.openaiApiKey },
      "openai-chat": { baseUrl: config.models.chatBaseUrl, apiKey: config.models.chatApiKey },
      anthropic: { baseUrl: Option.some(config.models.anthropicBaseUrl), apiKey: config.models.anthropicApiKey }
    } as const
    const envName = {
      openai: "SWITCHYARD_OPENAI",
      "openai-chat": "SWITCHYARD_OPENAI_CHAT",
      anthropic: "SWITCHYARD_ANTHROPIC"
    } as const

    const resolve = (organizationId: OrganizationId, model: ModelConfig) =>
      Effect.gen(function*() {
        if (model.provider === "scripted") {
          return {
            provider: scripted(model.script ?? []),
            connection: { baseUrl: "scripted:", apiKey: undefined, dispatcher: direct }
          }
        }
        const name = model.provider
        const org = yield* settings.settingsFor(organizationId, name)
        const env = deployment[name]
        const userUrl = model.base_url ?? org?.baseUrl
        const baseUrl = userUrl ?? Option.getOrUndefined(env.baseUrl)
        const apiKey = org?.apiKey ?? Option.getOrUndefined(Option.map(env.apiKey, Redacted.value))
        if (baseUrl === undefined) {
          return yield* Effect.fail(notConfigured(
            `No endpoint is configured for the '${name}' provider: set the agent's model.base_url, ` +
              `PUT /v1/model-providers/${name} with a base_url, or ${envName[name]}_BASE_URL.`
          ))
        }
        if (apiKey === undefined && name !== "openai-chat") {
          return yield* Effect.fail(notConfigured(
            `No API key is configured for the '${name}' provider: PUT /v1/model-providers/${name} with an api_key, ` +
              `or set ${envName[name]}_API_KEY.`
          ))
        }
        const connection: ProviderConnection = {
          baseUrl,
          apiKey,
          dispatcher: userUrl === undefined ? direct : egress.dispatcher
        }
        return { provider: providerFor(name) as ModelProvider, connection }
      })

    // metrics and a GenAI span per attempt, when on (issue 23)
    const observe = yield* observedModelCall
    const call = (
      organizationId: OrganizationId,
      model: ModelConfig,
      request: ModelRequest,
      onTextDelta?: (delta: string) => void
    ) => {
      const attempt = Effect.gen(function*() {
        const { connection, provider } = yield* resolve(organizationId, model)
        const started = performance.now()
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            provider.call(connection, request, onTextDelta === undefined ? { signal } : { signal, onTextDelta }),
          catch: (e) =>
            e instanceof ModelError
              ? e
              : new ModelError({ code: "model_bad_response", message: String(e), retryable: false })
        })
        return { response, cost: prices.cost(response.model, response.usage), durationMs: performance.now() - started }
      }).pipe(observe(model))
      // retried twice, 0.5 s then 1 s later; the first attempt goes without a schedule, as most calls need none
      return attempt.pipe(Effect.catchIf((e) => e.retryable, () =>
        attempt.pipe(
          Effect.retry({ times: 1, while: (e) => e.retryable, schedule: Schedule.exponential("1 second") }),
          Effect.delay("500 millis")
        )))
    }

    /** A worst-case price for a call, reserved against the agent's budget before it is made. */
    const estimate = (model: ModelConfig, request: ModelRequest) => {
      const chars = request.instructions.length + JSON.stringify(request.messages).length +
        JSON.stringify(request.tools).length
      const input = Math.ceil(chars / 3) + 64
      const output = model.max_output_tokens ?? (model.provider === "scripted" ? Math.ceil(chars / 3) + 64 : 4096)
      return prices.cost(model.name ?? model.provider, { input_tokens: input, output_tokens: output, cached_tokens: 0 })
    }

    return { call, estimate } as const
  })
}) {}
