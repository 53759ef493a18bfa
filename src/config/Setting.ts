import { Config, ConfigError, Duration, Either } from "effect"

/**
 * The readers every setting of the configuration is read with (src/config/SwitchyardConfig.ts), for one rule
 * (docs/reference/configuration.md): a variable set to nothing or to blanks (`VAR=` in an env file, `VAR: ""`
 * in a manifest) is unset, whatever its kind: its default applies, or it is none when optional. Effect's own
 * readers take "" as a value: as port 0 for an integer, as an error for a boolean, a duration or a choice.
 */
const unsetWhenEmpty = <A>(kind: Config.Config<A>): Config.Config<A> => {
  // unnamed, Config.string(), boolean(), integer(), number() and literal(…)() are primitives: the parse a
  // provider applies to a variable's text
  const { description, parse } = kind as Config.Config.Primitive<A>
  if (typeof parse !== "function") throw new Error(`not a primitive config: ${description}`)
  return Config.primitive(
    description,
    (text) => text.trim() === "" ? Either.left(ConfigError.MissingData([], "empty, so unset")) : parse(text)
  )
}

const reader = <A>(kind: Config.Config<A>) => {
  const read = unsetWhenEmpty(kind)
  return (name: string) => Config.nested(read, name)
}

export const string = reader(Config.string())

export const boolean = reader(Config.boolean())

export const integer = reader(Config.integer())

export const number = reader(Config.number())

export const literal = <const Literals extends ReadonlyArray<Config.LiteralValue>>(...literals: Literals) =>
  reader(Config.literal(...literals)())

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `5s`, `100ms`, `2h` (units ms, s, m, h, d) in milliseconds; undefined when the text is not written so. */
export const compactMillis = (text: string): number | undefined => {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(text.trim())
  return match === null ? undefined : Number(match[1]) * UNIT_MS[match[2]!]!
}

/** Written like `6 seconds`, `500 millis`, `2 minutes` (as Config.duration reads it), or `6s`, `500ms`, `2m`. */
export const duration = (name: string) =>
  string(name).pipe(Config.mapOrFail((text) => {
    const compact = compactMillis(text)
    return compact !== undefined ? Either.right(Duration.millis(compact)) : Either.fromOption(
      Duration.decodeUnknown(text),
      () =>
        ConfigError.InvalidData(
          [],
          `Expected a duration such as 15s, 500ms, 2m or "15 seconds" but received ${JSON.stringify(text)}`
        )
    )
  }))

export const redacted = (name: string) => Config.redacted(string(name))

/**
 * A check of a value already read (after its default, or made optional): `Config.validate` there reports no
 * variable, so this names it.
 */
export const check = <A>(name: string, message: string, ok: (a: A) => boolean) =>
  Config.mapOrFail((a: A) => ok(a) ? Either.right(a) : Either.left(ConfigError.InvalidData([name], message)))
