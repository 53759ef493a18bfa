import { anthropic } from "./Anthropic.js"
import { chatCompletions } from "./ChatCompletions.js"
import { ModelError, type ModelProvider } from "./ModelProvider.js"
import { openAiResponses } from "./OpenAiResponses.js"

export type ProviderName = "openai" | "openai-chat" | "anthropic"

const PROVIDERS: Record<ProviderName, ModelProvider> = {
  openai: openAiResponses,
  "openai-chat": chatCompletions,
  anthropic
}

/** The HTTP provider for a configured provider name (the scripted one is built from its script instead). */
export const providerFor = (name: ProviderName): ModelProvider => {
  // names come from configuration, so the type alone does not guarantee one of ours
  const provider = Object.hasOwn(PROVIDERS, name) ? PROVIDERS[name] : undefined
  if (provider === undefined) {
    throw new ModelError({
      code: "model_not_configured",
      message: `unknown model provider "${name}"`,
      retryable: false
    })
  }
  return provider
}
