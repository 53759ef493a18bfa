import type { FuzzOptions } from "./FuzzRun.js"

const number = (name: string, fallback: number) => {
  const raw = process.env[name]
  if (raw === undefined || raw === "") return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got '${raw}'`)
  return value
}

export interface FuzzSettings {
  readonly rest: FuzzOptions
  readonly mcp: FuzzOptions
  /** How long one request may take before it counts as a hang. */
  readonly timeoutMs: number
}

/**
 * The fuzz's size and seed: fixed defaults that fit CI, or FUZZ_SEED, FUZZ_RUNS (REST), FUZZ_MCP_RUNS,
 * FUZZ_SHRINK_MS (time to shrink counterexamples) and FUZZ_TIMEOUT_MS for a larger or another run.
 */
export const fuzzSettings = (
  defaults: { readonly runs: number; readonly mcpRuns: number; readonly shrinkMs: number }
) => {
  const seed = number("FUZZ_SEED", 19)
  const shrinkBudgetMs = number("FUZZ_SHRINK_MS", defaults.shrinkMs)
  const shrink = { shrinkBudgetMs, shrinkPerFailureMs: 5_000 }
  return {
    rest: { seed, numRuns: number("FUZZ_RUNS", defaults.runs), ...shrink },
    mcp: { seed, numRuns: number("FUZZ_MCP_RUNS", defaults.mcpRuns), ...shrink },
    timeoutMs: number("FUZZ_TIMEOUT_MS", 10_000)
  } satisfies FuzzSettings
}
