import { Cause, Effect, Exit } from "effect"
import type { ModelConfig } from "../../schema/Agents.js"
import type { ModelCallResult } from "../agents/models/ModelProvider.js"
import { NodeMetrics } from "./NodeMetrics.js"
import { leanSpansWhenTracing } from "./Tracing.js"

/** `gen_ai.system` (OpenTelemetry GenAI semantic conventions) of each provider kind. */
const GEN_AI_SYSTEM: Record<string, string> = {
  openai: "openai",
  "openai-chat": "openai",
  anthropic: "anthropic",
  scripted: "scripted"
}

/**
 * Wraps one model call attempt (ModelGateway.call): its tokens, cost and duration into the metrics, and, while
 * spans are exported, a client span named `chat {model}` with the GenAI attributes (gen_ai.system,
 * gen_ai.operation.name, gen_ai.request.model, gen_ai.response.model, gen_ai.usage.input_tokens and
 * output_tokens, gen_ai.response.finish_reasons). With both off, the attempt is returned as it is.
 */
export const observedModelCall = Effect.gen(function*() {
  const metrics = yield* NodeMetrics
  const spans = yield* leanSpansWhenTracing
  const record = metrics.modelCall
  return (model: ModelConfig) =>
  <E, R>(attempt: Effect.Effect<ModelCallResult, E, R>): Effect.Effect<ModelCallResult, E, R> => {
    if (record === undefined && spans === undefined) return attempt
    const requested = model.name ?? model.provider
    return Effect.withFiberRuntime((fiber) => {
      const started = performance.now()
      // a leaf: the attempt makes no span worth nesting (the provider is called over undici), and entering
      // the context is most of what a span costs a task (Spans.ts)
      const span = spans?.start(fiber, `chat ${requested}`, "client", {
        "gen_ai.system": GEN_AI_SYSTEM[model.provider] ?? model.provider,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": requested,
        "switchyard.model.provider": model.provider,
        ...(model.max_output_tokens === undefined ? {} : { "gen_ai.request.max_tokens": model.max_output_tokens })
      })
      return Effect.onExit(attempt, (exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) {
            const r = exit.value
            record?.({
              provider: model.provider,
              model: r.response.model,
              inputTokens: r.response.usage.input_tokens,
              outputTokens: r.response.usage.output_tokens,
              cachedTokens: r.response.usage.cached_tokens,
              cost: r.cost,
              seconds: r.durationMs / 1000,
              ok: true
            })
            span?.attribute("gen_ai.response.model", r.response.model)
            span?.attribute("gen_ai.usage.input_tokens", r.response.usage.input_tokens)
            span?.attribute("gen_ai.usage.output_tokens", r.response.usage.output_tokens)
            span?.attribute("gen_ai.response.finish_reasons", [r.response.finish])
            span?.attribute("switchyard.model.cost_usd", r.cost)
          } else if (Cause.isFailure(exit.cause)) {
            // a failed call (not an interrupted one) counts as an error
            record?.({
              provider: model.provider,
              model: requested,
              inputTokens: 0,
              outputTokens: 0,
              cachedTokens: 0,
              cost: 0,
              seconds: (performance.now() - started) / 1000,
              ok: false
            })
          }
          if (span !== undefined) spans!.end(span, exit)
        }))
    })
  }
})
