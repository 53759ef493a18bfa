import type { ModelPrices, Price } from "../config/ModelPrices.js"

// list prices at the time of writing; override or extend with SWITCHYARD_MODEL_PRICES
const BUILT_IN: Record<string, Price> = {
  "gpt-4.1": { input: 2, output: 8, cached_input: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cached_input: 0.1 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cached_input: 0.025 },
  "gpt-4o": { input: 2.5, output: 10, cached_input: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cached_input: 0.075 },
  "gpt-5": { input: 1.25, output: 10, cached_input: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cached_input: 0.025 },
  // each model a shorter name is a prefix of is listed, else it would cost that one's price (gpt-5-nano gpt-5's)
  "gpt-5-nano": { input: 0.05, output: 0.4, cached_input: 0.005 },
  "gpt-5-pro": { input: 15, output: 120 },
  "o1": { input: 15, output: 60, cached_input: 7.5 },
  "o1-mini": { input: 1.1, output: 4.4, cached_input: 0.55 },
  "o1-pro": { input: 150, output: 600 },
  "o3": { input: 2, output: 8, cached_input: 0.5 },
  "o3-mini": { input: 1.1, output: 4.4, cached_input: 0.55 },
  "o3-pro": { input: 20, output: 80 },
  "o4-mini": { input: 1.1, output: 4.4, cached_input: 0.275 },
  "claude-opus-4": { input: 15, output: 75, cached_input: 1.5 },
  "claude-opus-4-1": { input: 15, output: 75, cached_input: 1.5 },
  "claude-opus-4-5": { input: 5, output: 25, cached_input: 0.5 },
  "claude-3-7-sonnet": { input: 3, output: 15, cached_input: 0.3 },
  "claude-3-5-sonnet": { input: 3, output: 15, cached_input: 0.3 },
  "claude-3-haiku": { input: 0.25, output: 1.25, cached_input: 0.03 },
  "claude-sonnet-4-5": { input: 3, output: 15, cached_input: 0.3 },
  "claude-sonnet-4": { input: 3, output: 15, cached_input: 0.3 },
  "claude-haiku-4-5": { input: 1, output: 5, cached_input: 0.1 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cached_input: 0.08 },
  scripted: { input: 0, output: 0 }
}

/** The price table: built-in list prices, overridden and extended by SWITCHYARD_MODEL_PRICES (read by the config). */
export const makePriceTable = (overrides: ModelPrices) => {
  const table: Record<string, Price> = { ...BUILT_IN, ...overrides }
  /** Exact name, else the longest known prefix (dated snapshots such as gpt-4.1-mini-2025-04-14). */
  const priceOf = (model: string): Price | undefined =>
    table[model] ??
      Object.entries(table).filter(([name]) => model.startsWith(name)).sort((a, b) => b[0].length - a[0].length)[0]?.[1]
  const cost = (model: string, usage: { input_tokens: number; output_tokens: number; cached_tokens: number }) => {
    const p = priceOf(model)
    if (p === undefined) return 0
    const fresh = Math.max(0, usage.input_tokens - usage.cached_tokens)
    return (fresh * p.input + usage.cached_tokens * (p.cached_input ?? p.input) + usage.output_tokens * p.output) /
      1_000_000
  }
  return { priceOf, cost }
}
