import { describe, expect, it } from "vitest"
import { makePriceTable } from "../../src/agents/Prices.js"

describe("the built-in price table", () => {
  const table = makePriceTable({})

  it("prices a model a shorter name is a prefix of at its own price, not the shorter one's", () => {
    expect(table.priceOf("gpt-5-nano-2025-08-07")?.output).toBe(0.4)
    expect(table.priceOf("gpt-5-2025-08-07")?.output).toBe(10)
    expect(table.priceOf("o3-pro")?.output).toBe(80)
    expect(table.priceOf("o3-2025-04-16")?.output).toBe(8)
    expect(table.priceOf("claude-opus-4-5-20251101")?.output).toBe(25)
    expect(table.priceOf("claude-opus-4-20250514")?.output).toBe(75)
  })

  it("knows no price for a model it does not list", () => {
    expect(table.priceOf("llama3.1")).toBeUndefined()
    expect(table.cost("llama3.1", { input_tokens: 1000, output_tokens: 1000, cached_tokens: 0 })).toBe(0)
  })
})
