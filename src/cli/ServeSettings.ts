import { Config, ConfigError, ConfigProvider, Duration, Effect, HashSet, Option, Redacted } from "effect"
import { config } from "../config/SwitchyardConfig.js"
import type { EnvironmentEntry } from "./Help.js"

/**
 * The settings `switchyard serve` reads, taken from the config module itself (src/config/SwitchyardConfig.ts)
 * so `serve --help` cannot drift from it: the variable names are those the configuration asks a provider for,
 * and each default is the one its `Config.withDefault` holds.
 */
export interface Setting {
  readonly name: string
  /** What kind of value: `integer`, `duration`, `text`, … */
  readonly kind: string
  readonly fallback: string | undefined
}

/** Every variable name, in the order the configuration reads them: asked of a provider that has none. */
const namesOf = (settings: Config.Config<unknown>) => {
  const names: Array<{ name: string; kind: string }> = []
  const recording = ConfigProvider.fromFlat(ConfigProvider.makeFlat({
    load: (path, primitive) => {
      const name = path.join("_")
      if (!names.some((n) => n.name === name)) names.push({ name, kind: kindOf(primitive) })
      return Effect.fail(ConfigError.MissingData([...path], `${name} is not set`))
    },
    enumerateChildren: () => Effect.succeed(HashSet.empty()),
    patch: { _tag: "Empty" } as any
  }))
  Effect.runSync(Effect.either(Effect.withConfigProvider(settings, recording)))
  return names
}

// Config primitives describe themselves "an integer property", "a duration property", …
const kindOf = (primitive: Config.Config.Primitive<unknown>) =>
  String((primitive as any).description ?? "").replace(/^an? /, "").replace(/ property$/, "") || "text"

/**
 * The defaults: Config keeps `withDefault(x)` as a fallback to a constant. This reads Effect 3's Config tree
 * (pinned); an unexpected shape only loses the default shown, never a name.
 */
const defaultsOf = (root: Config.Config<unknown>) => {
  const found = new Map<string, unknown>()
  const walk = (node: any, fallback: Option.Option<unknown>, depth: number): void => {
    if (node === null || typeof node !== "object" || depth > 200) return
    switch (node._tag) {
      case "Nested":
        if (Option.isSome(fallback) && typeof node.name === "string") found.set(node.name, fallback.value)
        return walk(node.config, fallback, depth + 1)
      case "Fallback": {
        const second = node.second?._tag === "Lazy" ? node.second.config() : node.second
        const constant = second?._tag === "Constant" ? Option.some(second.value) : Option.none()
        walk(node.first, Option.orElse(constant, () => fallback), depth + 1)
        return walk(second, Option.none(), depth + 1)
      }
      case "ZipWith":
        walk(node.left, fallback, depth + 1)
        return walk(node.right, fallback, depth + 1)
      case "MapOrFail":
        return walk(node.original, fallback, depth + 1)
      case "Described":
        return walk(node.config, fallback, depth + 1)
      case "Lazy":
        return walk(node.config(), fallback, depth + 1)
    }
  }
  walk(root, Option.none(), 0)
  return found
}

const UNITS: ReadonlyArray<readonly [number, string]> = [
  [86_400_000, "day"],
  [3_600_000, "hour"],
  [60_000, "minute"],
  [1000, "second"],
  [1, "milli"]
]

const formatDuration = (d: Duration.Duration) => {
  const ms = Duration.toMillis(d)
  const [size, unit] = UNITS.find(([size]) => ms % size === 0 && ms >= size) ?? [1, "milli"]
  const n = ms / size
  return `${n} ${unit}${n === 1 && unit !== "milli" ? "" : "s"}`
}

const formatDefault = (value: unknown): string | undefined => {
  if (Option.isOption(value)) return Option.isNone(value) ? undefined : formatDefault(value.value)
  if (Duration.isDuration(value)) return formatDuration(value)
  if (Redacted.isRedacted(value)) return "(secret)"
  if (typeof value === "string") return value === "" ? "(empty)" : value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return undefined
}

const describe = (settings: Config.Config<unknown>): ReadonlyArray<Setting> => {
  const defaults = defaultsOf(settings)
  return namesOf(settings).map(({ kind, name }) => {
    const fallback = defaults.get(name)
    return { name, kind: Duration.isDuration(fallback) ? "duration" : kind, fallback: formatDefault(fallback) }
  })
}

/** The node's settings: the config module's, in its order. */
export const serveSettings: ReadonlyArray<Setting> = describe(config as Config.Config<unknown>)

/** Read by the command line itself, before the configuration. */
const launcherSettings: ReadonlyArray<EnvironmentEntry> = [
  ["SWITCHYARD_LOG_LEVEL", "trace, debug, info, warning, error or none (default info). Logs are JSON lines on stderr."],
  ["SWITCHYARD_SOURCE_MAPS", "true or false (default false); true: stack traces point into the TypeScript sources."]
]

export const serveEnvironment: ReadonlyArray<EnvironmentEntry> = [
  ...serveSettings.map((s): EnvironmentEntry => [
    s.name,
    `${s.kind}${s.fallback === undefined ? ", unset by default" : `, default ${s.fallback}`}`
  ]),
  ...launcherSettings
]

/** What the commands that open the database themselves (migrate, bootstrap) read. */
export const databaseEnvironment: ReadonlyArray<EnvironmentEntry> = serveEnvironment.filter(([name]) =>
  ["DATABASE_URL", "SWITCHYARD_DATA_DIR", "SWITCHYARD_DB_POOL_SIZE", "SWITCHYARD_LOG_LEVEL"].includes(name)
)
