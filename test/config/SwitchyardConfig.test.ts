/**
 * The configuration read from a map, as from the environment: each bad value is a ConfigError naming its
 * variable (src/cli.ts prints it as `switchyard: invalid configuration: …`), found before anything starts;
 * an empty value is unset, for every setting.
 */
import { Config, ConfigProvider, Duration, Effect, Either, LogLevel, Option } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { makePriceTable } from "../../src/agents/Prices.js"
import { serveSettings } from "../../src/cli/ServeSettings.js"
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

describe("settings read with the others, checked before the node starts", () => {
  it("SWITCHYARD_TRUST_PROXY, SWITCHYARD_APPROVAL_TIMEOUT, the knowledge, function and webhook limit settings: defaults", () => {
    const settings = Either.getOrThrow(read(config, {}))
    expect(settings.trustProxy).toBe(false)
    expect(Duration.toMillis(settings.approvalTimeout)).toBe(24 * 3_600_000)
    const { extractionTimeout, ...knowledge } = settings.knowledge
    expect(knowledge).toEqual({ maxDocumentBytes: 25 * 1024 * 1024, workers: 2 })
    expect(Duration.toMillis(extractionTimeout)).toBe(5 * 60_000)
    expect(settings.functionWorkers).toBe(Math.max(2, Os.availableParallelism()))
    expect(settings.webhooks.maxEndpoints).toBe(50)
  })

  it("takes the values given", () => {
    const settings = Either.getOrThrow(read(config, {
      SWITCHYARD_TRUST_PROXY: "true",
      SWITCHYARD_APPROVAL_TIMEOUT: "90 seconds",
      SWITCHYARD_MAX_DOCUMENT_BYTES: "200000",
      SWITCHYARD_KNOWLEDGE_WORKERS: "0",
      SWITCHYARD_KNOWLEDGE_EXTRACTION_TIMEOUT: "30s",
      SWITCHYARD_FUNCTION_WORKERS: "3",
      SWITCHYARD_WEBHOOK_MAX_ENDPOINTS: "0"
    }))
    expect(settings.trustProxy).toBe(true)
    expect(Duration.toMillis(settings.approvalTimeout)).toBe(90_000)
    const { extractionTimeout, ...knowledge } = settings.knowledge
    expect(knowledge).toEqual({ maxDocumentBytes: 200_000, workers: 0 })
    expect(Duration.toMillis(extractionTimeout)).toBe(30_000)
    expect(settings.functionWorkers).toBe(3)
    expect(settings.webhooks.maxEndpoints).toBe(0)
  })

  it("a duration may be written short, as the webhook backoff's delays are", () => {
    const settings = Either.getOrThrow(read(config, {
      SWITCHYARD_APPROVAL_TIMEOUT: "90s",
      SWITCHYARD_WEBHOOK_TIMEOUT: "3s",
      SWITCHYARD_TASK_TIMEOUT: "2m"
    }))
    expect(Duration.toMillis(settings.approvalTimeout)).toBe(90_000)
    expect(Duration.toMillis(settings.webhooks.timeout)).toBe(3_000)
    expect(Duration.toMillis(settings.taskTimeout)).toBe(120_000)
  })

  it("a bad value is named", () => {
    const cases: ReadonlyArray<readonly [string, string, string]> = [
      ["SWITCHYARD_TRUST_PROXY", "maybe", `Expected a boolean value but received "maybe"`],
      [
        "SWITCHYARD_APPROVAL_TIMEOUT",
        "a day",
        `Expected a duration such as 15s, 500ms, 2m or "15 seconds" but received "a day"`
      ],
      ["SWITCHYARD_MAX_DOCUMENT_BYTES", "25MB", `Expected an integer value but received "25MB"`],
      ["SWITCHYARD_MAX_DOCUMENT_BYTES", "0", "must be a positive integer"],
      ["SWITCHYARD_KNOWLEDGE_WORKERS", "-1", "must be 0 (off) or a positive integer"],
      ["SWITCHYARD_FUNCTION_WORKERS", "0", "must be a positive integer"],
      ["SWITCHYARD_FUNCTION_WORKERS", "two", `Expected an integer value but received "two"`],
      ["SWITCHYARD_WEBHOOK_MAX_ENDPOINTS", "-5", "must be 0 (off) or a positive integer"]
    ]
    for (const [name, value, wrong] of cases) {
      expect(problem(config, { [name]: value })).toBe(`(Invalid data at ${name}: "${wrong}")`)
    }
  })

  it("are listed by serve --help (taken from the configuration), with their defaults", () => {
    const listed = new Map(serveSettings.map((s) => [s.name, s]))
    expect(listed.get("SWITCHYARD_TRUST_PROXY")).toEqual({
      name: "SWITCHYARD_TRUST_PROXY",
      kind: "boolean",
      fallback: "false"
    })
    expect(listed.get("SWITCHYARD_APPROVAL_TIMEOUT")?.fallback).toBe("1 day")
    expect(listed.get("SWITCHYARD_MAX_DOCUMENT_BYTES")?.fallback).toBe("26214400")
    expect(listed.get("SWITCHYARD_KNOWLEDGE_WORKERS")?.fallback).toBe("2")
    expect(listed.get("SWITCHYARD_FUNCTION_WORKERS")?.kind).toBe("integer")
  })
})

describe("an empty value is unset", () => {
  it("for every setting, whatever its kind: as if it were not there", () => {
    const unset = read(config, {})
    expect(Either.isRight(unset)).toBe(true)
    expect(serveSettings.length).toBeGreaterThan(80)
    for (const { name } of serveSettings) {
      for (const empty of ["", "  "]) {
        expect({ name, empty, settings: read(config, { [name]: empty }) }).toEqual({ name, empty, settings: unset })
      }
    }
  })

  it("SWITCHYARD_HTTP_PORT= listens on the default port, not on any free one", () => {
    const settings = Either.getOrThrow(read(config, { SWITCHYARD_HTTP_PORT: "" }))
    expect(settings.httpPort).toBe(8080)
    expect(Either.getOrThrow(read(config, { SWITCHYARD_HTTP_PORT: "0" })).httpPort).toBe(0)
  })

  it("a boolean, a duration, a choice or an optional setting left empty takes its default", () => {
    const settings = Either.getOrThrow(read(config, {
      SWITCHYARD_TRUST_PROXY: "",
      SWITCHYARD_SIGN_IN_PAGES: "",
      SWITCHYARD_TASK_TIMEOUT: " ",
      SERVICE_SKILL_VISIBILITY_MODE: "",
      OTEL_TRACES_SAMPLER: "",
      SWITCHYARD_RUNNER_LISTEN_HOST: "",
      SWITCHYARD_HOST: ""
    }))
    expect(settings.trustProxy).toBe(false)
    expect(settings.signInPages).toBe(true)
    expect(Duration.toMillis(settings.taskTimeout)).toBe(600_000)
    expect(settings.skillVisibilityMode).toBe("report")
    expect(settings.tracing.sampler).toBe("parentbased_always_on")
    expect(settings.runner.listenHost).toEqual(Option.none())
    expect(settings.host).toBe("127.0.0.1")
  })

  it("SWITCHYARD_LOG_LEVEL, read by the command line, too", () => {
    expect(Either.getOrThrow(read(minimumLogLevel, { SWITCHYARD_LOG_LEVEL: " " }))).toBe(LogLevel.Info)
  })
})

describe("docs/reference/configuration.md", () => {
  const table = Fs.readFileSync(Path.resolve(import.meta.dirname, "../../docs/reference/configuration.md"), "utf8")
  const documented = [...table.matchAll(/^\| `([A-Z][A-Z0-9_]+)`/gm)].map((m) => m[1]!)
  const rateLimits = /^\| `SWITCHYARD_RATE_LIMIT_<NAME>`.*Names: (.*)$/m.exec(table)?.[1] ?? ""

  it("documents every setting of the configuration", () => {
    for (const { name } of serveSettings) {
      const limit = /^SWITCHYARD_RATE_LIMIT_([A-Z_]+?)(_WINDOW)?$/.exec(name)
      if (limit === null) expect(documented).toContain(name)
      else expect(rateLimits).toContain(`\`${limit[1]}\``)
    }
  })

  it("documents nothing the node does not read", () => {
    const elsewhere = ["SWITCHYARD_LOG_LEVEL", "SWITCHYARD_SOURCE_MAPS", "SWITCHYARD_BUILTIN_AGENT_MODEL"]
    const read = new Set(serveSettings.map((s) => s.name))
    expect(documented.filter((name) => !read.has(name) && !elsewhere.includes(name))).toEqual([])
  })
})
