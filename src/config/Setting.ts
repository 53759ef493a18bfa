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

/** Written like `6 seconds`, `500 millis`, `2 minutes`, as Config.duration reads it. */
export const duration = (name: string) =>
  string(name).pipe(Config.mapOrFail((text) =>
    Either.fromOption(
      Duration.decodeUnknown(text),
      () => ConfigError.InvalidData([], `Expected a duration but received ${JSON.stringify(text)}`)
    )
  ))

export const redacted = (name: string) => Config.redacted(string(name))

/**
 * A check of a value already read (after its default, or made optional): `Config.validate` there reports no
 * variable, so this names it.
 */
export const check = <A>(name: string, message: string, ok: (a: A) => boolean) =>
  Config.mapOrFail((a: A) => ok(a) ? Either.right(a) : Either.left(ConfigError.InvalidData([name], message)))
