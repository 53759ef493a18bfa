import { Config, Effect, Option, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { CliFailure } from "./CliFailure.js"

/** What `switchyard login` stores: the node's URL and the key to send it (only it). */
export const Login = Schema.Struct({ url: Schema.String, api_key: Schema.String })
export type Login = typeof Login.Type

/** `$XDG_CONFIG_HOME/switchyard/config.json`, else `~/.config/switchyard/config.json`. */
export const loginFilePath = Config.string("XDG_CONFIG_HOME").pipe(
  Config.withDefault(""),
  Config.map((xdg) =>
    Path.join(xdg.trim() !== "" && Path.isAbsolute(xdg) ? xdg : Path.join(Os.homedir(), ".config"), "switchyard")
  ),
  Config.map((dir) => Path.join(dir, "config.json"))
)

const decode = Schema.decodeUnknownEither(Schema.parseJson(Login))

export const readLogin: Effect.Effect<Option.Option<Login>, CliFailure> = Effect.gen(function*() {
  const path = yield* Effect.orDie(loginFilePath)
  const text = yield* Effect.try({
    try: () => Option.some(Fs.readFileSync(path, "utf8")),
    catch: (e: any) => e
  }).pipe(
    Effect.catchAll((e) =>
      e?.code === "ENOENT"
        ? Effect.succeed(Option.none<string>())
        : Effect.fail(CliFailure.usage(`cannot read ${path}: ${e?.message ?? e}`))
    )
  )
  if (Option.isNone(text)) return Option.none()
  const login = decode(text.value)
  if (login._tag === "Left") {
    return yield* CliFailure.usage(`${path} is not a login file ({"url", "api_key"}): run \`switchyard login\` again`)
  }
  return Option.some(login.right)
})

/**
 * Written whole (a temporary file renamed over the old one) with mode 0600 in a 0700 directory: the key is a
 * secret, readable by its owner only.
 */
export const writeLogin = (login: Login): Effect.Effect<string, CliFailure> =>
  Effect.gen(function*() {
    const path = yield* Effect.orDie(loginFilePath)
    yield* Effect.try({
      try: () => {
        Fs.mkdirSync(Path.dirname(path), { recursive: true, mode: 0o700 })
        const temporary = `${path}.${process.pid}.tmp`
        Fs.writeFileSync(temporary, JSON.stringify(login, null, 2) + "\n", { mode: 0o600 })
        Fs.chmodSync(temporary, 0o600)
        Fs.renameSync(temporary, path)
      },
      catch: (e: any) => CliFailure.usage(`cannot write ${path}: ${e?.message ?? e}`)
    })
    return path
  })
