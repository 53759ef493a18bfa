import { Effect, Option, Redacted } from "effect"
import { Agent } from "undici"
import type { ModelConfig } from "../../schema/Agents.js"
import type { OrganizationId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { Egress } from "../connectors/Egress.js"
import { observedModelCall } from "../observability/ModelCallObserver.js"
import { ModelProviders } from "./ModelProviders.js"
import { providerFor } from "./models/index.js"
import {
  ModelError,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ProviderConnection,
  type Usage
} from "./models/ModelProvider.js"
import { scripted } from "./models/Scripted.js"
import { MAX_TOKENS } from "./models/WireJson.js"
import { makePriceTable } from "./Prices.js"

export type { ModelCallResult } from "./models/ModelProvider.js"

/**
 * The output a budgeted call is reserved for when the agent sets no `max_output_tokens`, and the limit it is
 * then sent with, so that the reservation bounds what the call can spend.
 */
export const BUDGETED_OUTPUT_TOKENS = 4096

/** The waits before a retryable call's second and third attempts, and the longest Retry-After waited for. */
const RETRY_DELAYS_MS = [500, 1000] as const
const MAX_RETRY_AFTER_MS = 60_000

const notConfigured = (message: string) => new ModelError({ code: "model_not_configured", message, retryable: false })
const badUsage = (message: string) => new ModelError({ code: "model_bad_usage", message, retryable: false })

/** The most a call may cost: what a usage record (`cost_usd numeric(14, 8)`) holds, rounded down. */
const MAX_CALL_COST_USD = 999_999.99

/** The model an agent is configured with, by which its calls are priced. */
const configuredModel = (model: ModelConfig) => model.name ?? model.provider

/**
 * Tokens beyond the text a prompt can take: per message (role markers, separators; a tool call's id and name
 * are in the text counted), and once for the system prompt a provider adds when there are tools (Anthropic's
 * tool-use prompt is up to ~350 tokens) and the answer's opening.
 */
const PER_MESSAGE_TOKENS = 8
const TOOLS_PROMPT_TOKENS = 512
const REPLY_TOKENS = 64

/**
 * The most tokens a call's input can be for a byte-level BPE tokenizer (OpenAI's, Llama 3's, Qwen's, …;
 * Anthropic publishes none, and is assumed alike): each token is at least one byte of UTF-8, so a text's
 * tokens are at most its bytes. The text counted is the request as JSON (its escapes and keys only add
 * bytes; a provider's rendering of a tool's schema is shorter than the schema as JSON), plus the framing
 * above. Characters are no bound: a CJK character is three bytes and often more than one token.
 */
export const inputTokenBound = (request: ModelRequest) =>
  Buffer.byteLength(request.instructions, "utf8") + Buffer.byteLength(JSON.stringify(request.messages), "utf8") +
  Buffer.byteLength(JSON.stringify(request.tools), "utf8") + PER_MESSAGE_TOKENS * (request.messages.length + 1) +
  (request.tools.length > 0 ? TOOLS_PROMPT_TOKENS : 0) + REPLY_TOKENS

/** Tokens of a text by the usual rule of thumb for English (OpenAI's): 4 characters a token. */
const roughTokens = (text: string) => Math.ceil(text.length / 4)

/**
 * A call's usage when the server reported none (some OpenAI-compatible servers leave it out, streamed or not):
 * counted as 0 it cost nothing, and a budget never ran out. Estimated from the request and the answer instead,
 * and marked so.
 */
const estimatedUsage = (request: ModelRequest, response: ModelResponse): Usage => ({
  input_tokens: roughTokens(request.instructions + JSON.stringify(request.messages) + JSON.stringify(request.tools)),
  // at most the output limit sent, which the call's reservation counted (the server kept to it)
  output_tokens: Math.min(
    roughTokens((response.text ?? "") + response.tool_calls.map((c) => c.name + JSON.stringify(c.arguments)).join("")),
    request.maxOutputTokens ?? Infinity
  ),
  cached_tokens: 0,
  estimated: true
})

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
      // once a listener heard part of an answer, another attempt would add a second answer after it
      let streamed = false
      const listener = onTextDelta === undefined ? undefined : (delta: string) => {
        streamed = true
        onTextDelta(delta)
      }
      const attempt = Effect.gen(function*() {
        const { connection, provider } = yield* resolve(organizationId, model)
        const started = performance.now()
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            provider.call(connection, request, listener === undefined ? { signal } : { signal, onTextDelta: listener }),
          catch: (e) =>
            e instanceof ModelError
              ? e
              : new ModelError({ code: "model_bad_response", message: String(e), retryable: false })
        })
        const reported = response.usage.reported === false
          ? { ...response, usage: estimatedUsage(request, response) }
          : response
        const cost = yield* costOf(model, reported)
        return { response: reported, cost, durationMs: performance.now() - started }
      }).pipe(observe(model))
      // retried twice, 0.5 s then 1 s later, or as much later as the server's Retry-After asks (up to a minute:
      // a longer wait fails the call at once, saying how long, rather than hold the task); the time limit bounds it
      const retried = (n: number): typeof attempt =>
        attempt.pipe(Effect.catchIf(
          (e) => e.retryable && n < RETRY_DELAYS_MS.length && (e.retryAfterMs ?? 0) <= MAX_RETRY_AFTER_MS,
          (e) =>
            streamed
              ? Effect.fail(
                new ModelError({
                  code: e.code,
                  message: `${e.message} (not tried again: part of its text had been streamed)`,
                  retryable: false,
                  status: e.status,
                  cause: e
                })
              )
              : Effect.delay(retried(n + 1), Math.max(RETRY_DELAYS_MS[n]!, e.retryAfterMs ?? 0))
        ))
      return retried(0)
    }

    /**
     * A call's cost: at the configured model's price, which its reservation was made at, or the reported
     * model's when that is known and higher (a server answering with a pricier model than asked for spent
     * that). A model the table does not know costs the configured model's price, not nothing. Usage the
     * records cannot hold, or a cost they cannot, fails the call (the Agent entity would be handed a spend
     * the database refuses).
     */
    const costOf = (model: ModelConfig, response: ModelResponse) => {
      const usage = response.usage
      if (usage.input_tokens > MAX_TOKENS || usage.cached_tokens > usage.input_tokens) {
        return Effect.fail(badUsage(
          `the model server reported ${usage.input_tokens} input tokens, ${usage.cached_tokens} of them cached: ` +
            `no prompt has more than ${MAX_TOKENS}, nor more cached than in all`
        ))
      }
      const cost = Math.max(prices.cost(configuredModel(model), usage), prices.cost(response.model, usage))
      return Number.isFinite(cost) && cost >= 0 && cost <= MAX_CALL_COST_USD
        ? Effect.succeed(cost)
        : Effect.fail(badUsage(
          `the call's cost at the configured prices, $${cost}, is more than $${MAX_CALL_COST_USD}, the most a ` +
            `call's record holds (${usage.input_tokens} input and ${usage.output_tokens} output tokens of ` +
            `${response.model}): check the usage the server reports, and SWITCHYARD_MODEL_PRICES`
        ))
    }

    /**
     * A worst-case price for a call, reserved against the agent's budget before it is made: its input's most
     * tokens at the configured model's price plus `max_output_tokens` (BUDGETED_OUTPUT_TOKENS when unset) of output.
     */
    const estimate = (model: ModelConfig, request: ModelRequest) => {
      const isScripted = model.provider === "scripted"
      // the scripted model counts a token per 4 characters of less than this text: a third of it bounds that
      const chars = isScripted
        ? request.instructions.length + JSON.stringify(request.messages).length + JSON.stringify(request.tools).length
        : 0
      const input = isScripted ? Math.ceil(chars / 3) + 64 : inputTokenBound(request)
      const output = model.max_output_tokens ?? (isScripted ? Math.ceil(chars / 3) + 64 : BUDGETED_OUTPUT_TOKENS)
      return prices.cost(configuredModel(model), { input_tokens: input, output_tokens: output, cached_tokens: 0 })
    }

    return { call, estimate } as const
  })
}) {}
