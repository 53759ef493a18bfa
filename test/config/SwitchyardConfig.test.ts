/**
 * The configuration read from a map, as from the environment: each bad value is a ConfigError naming its
 * variable (src/cli.ts prints it as `switchyard: invalid configuration: …`), found before anything starts.
 */
import { Config, ConfigProvider, Effect, Either, LogLevel } from "effect"
import { describe, expect, it } from "vitest"
import { makePriceTable } from "../../src/agents/Prices.js"
import { minimumLogLevel } from "../../src/config/MinimumLogLevel.js"
import { config } from "../../src/config/SwitchyardConfig.js"

const read = <A>(settings: Config.Config<A>, env: Record<string, string>) =>
  Effect.runSync(
    Effect.either(Effect.withConfigProvider(settings, ConfigProvider.fromMap(new Map(Object.entries(env)))))
  )

/** The message of a bad value, as the command line prints it after `invalid configuration: `. */
const problem = <A>(settings: Config.Config<A>, env: Record<string, string>) => {
  const result = read(settings, env)
  if (Either.isRight(result)) throw new Error(`accepted ${JSON.stringify(env)}`)
  return String(result.left)
}

describe("SWITCHYARD_MODEL_PRICES", () => {
  it("is parsed with the configuration; the price table takes the parsed prices over the built-in ones", () => {
    const settings = Either.getOrThrow(read(config, {
      SWITCHYARD_MODEL_PRICES: JSON.stringify({ "my-model": { input: 0.5, output: 1.5, cached_input: 0.1 } })
    }))
    expect(settings.modelPrices).toEqual({ "my-model": { input: 0.5, output: 1.5, cached_input: 0.1 } })
    const table = makePriceTable(settings.modelPrices)
    expect(table.priceOf("my-model-2025-01-01")).toEqual({ input: 0.5, output: 1.5, cached_input: 0.1 })
    expect(table.cost("my-model", { input_tokens: 1_000_000, output_tokens: 1_000_000, cached_tokens: 0 })).toBe(2)
    expect(table.priceOf("gpt-4o")).toEqual({ input: 2.5, output: 10, cached_input: 1.25 })

    for (const unset of ["", "  "]) {
      expect(Either.getOrThrow(read(config, { SWITCHYARD_MODEL_PRICES: unset })).modelPrices).toEqual({})
    }
  })

  it("not JSON, not an object, or an entry without numeric prices: named, with what is wrong and where", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["{bad", "not JSON ("],
      ["[]", "must be an object of prices by model name (not [])"],
      ["null", "must be an object of prices by model name (not null)"],
      [`{"m": 1}`, `model "m" must be an object with numeric "input" and "output" (not 1)`],
      [`{"m": {"input": 1}}`, `model "m": "output" is missing`],
      [`{"m": {"input": "1", "output": 2}}`, `model "m": "input" must be a number, 0 or more (not "1")`],
      [`{"m": {"input": 1, "output": -2}}`, `model "m": "output" must be a number, 0 or more (not -2)`],
      [`{"m": {"input": 1, "output": 2, "cached_input": "x"}}`, `model "m": "cached_input" must be a number`]
    ]
    for (const [value, wrong] of cases) {
      const message = problem(config, { SWITCHYARD_MODEL_PRICES: value })
      expect(message).toContain("Invalid data at SWITCHYARD_MODEL_PRICES: ")
      expect(message).toContain(wrong)
      expect(message).toContain(
        `expected JSON such as {"my-model": {"input": 0.5, "output": 1.5, "cached_input": 0.1}}`
      )
    }
  })
})

describe("SERVICE_SKILL_VISIBILITY_MODE", () => {
  it("is read with the other settings: report by default, a bad value named with the accepted ones", () => {
    expect(Either.getOrThrow(read(config, {})).skillVisibilityMode).toBe("report")
    expect(Either.getOrThrow(read(config, { SERVICE_SKILL_VISIBILITY_MODE: "enforce" })).skillVisibilityMode)
      .toBe("enforce")
    expect(problem(config, { SERVICE_SKILL_VISIBILITY_MODE: "loud" })).toBe(
      `(Invalid data at SERVICE_SKILL_VISIBILITY_MODE: "Expected one of (off, report, enforce) but received "loud"")`
    )
  })
})

describe("SWITCHYARD_LOG_LEVEL", () => {
  it("takes the documented levels in any case, empty as unset (info); anything else is named with them", () => {
    const level = (value: string | undefined) =>
      Either.getOrThrow(read(minimumLogLevel, value === undefined ? {} : { SWITCHYARD_LOG_LEVEL: value }))
    expect(level(undefined)).toBe(LogLevel.Info)
    expect(level("")).toBe(LogLevel.Info)
    expect(level("warning")).toBe(LogLevel.Warning)
    expect(level("Warning")).toBe(LogLevel.Warning)
    expect(level("DEBUG")).toBe(LogLevel.Debug)
    expect(level("none")).toBe(LogLevel.None)
    for (const bad of ["chatty", "warn", "constructor"]) {
      expect(problem(minimumLogLevel, { SWITCHYARD_LOG_LEVEL: bad })).toBe(
        `(Invalid data at SWITCHYARD_LOG_LEVEL: "must be one of trace, debug, info, warning, error, none (not "${bad}")")`
      )
    }
  })
})

describe("a check made after a default or on an optional value", () => {
  it("still names its variable", () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ["SWITCHYARD_PUBLIC_URL", "nope", "must be an absolute http(s) URL"],
      ["SWITCHYARD_APP_URL", "nope", "must be an absolute http(s) URL"],
      ["SWITCHYARD_MCP_PUBLIC_URL", "nope", "must be an absolute http(s) URL"],
      ["SWITCHYARD_INTERNAL_URL", "nope", "must be an absolute http(s) URL"],
      ["DATABASE_URL", "mysql://x", "must be a postgres:// or postgresql:// URL"],
      ["SWITCHYARD_EVENT_RETENTION", "1 second", "must be at least 1 minute"],
      ["SWITCHYARD_WEBHOOK_TIMEOUT", "1 millis", "must be at least 100 milliseconds"],
      ["SWITCHYARD_RATE_LIMIT_API_KEY_WINDOW", "10 millis", "must be at least 1 second"],
      ["SWITCHYARD_SHARD_LOCK_REFRESH_INTERVAL", "10 seconds", "must be shorter than SWITCHYARD_SHARD_LOCK_EXPIRATION"]
    ]
    for (const [name, value, wrong] of cases) {
      const expected = `(Invalid data at ${name}: "${wrong}`
      expect(problem(config, { [name]: value }).slice(0, expected.length)).toBe(expected)
    }
  })
})
