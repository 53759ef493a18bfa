import { Command, Options, Prompt } from "@effect/cli"
import { Config, Effect, Option, Redacted } from "effect"
import { Me } from "../../schema/Identity.js"
import { apiOptions, resolveUrl, withClient } from "./ApiTarget.js"
import { CliFailure } from "./CliFailure.js"
import type { EnvironmentEntry } from "./Help.js"
import { writeLogin } from "./LoginFile.js"
import { print, reportFailure } from "./Output.js"
import { readStdin } from "./Stdin.js"
import { sanitize } from "./Terminal.js"

/** The key when none was given: asked for on a terminal (not echoed), else the first line of stdin. */
const askKey = Effect.suspend(() =>
  process.stdin.isTTY === true
    ? Prompt.run(Prompt.password({ message: "API key" })).pipe(Effect.map(Redacted.value), Effect.orDie)
    : readStdin
).pipe(Effect.map((text) => text.trim().split("\n")[0]!.trim()))

export const loginCommand = Command.make(
  "login",
  {
    url: apiOptions.url,
    key: Options.text("key").pipe(
      Options.withPseudoName("KEY"),
      Options.withDescription("The API key to store. Else SWITCHYARD_API_KEY, else asked for (or read from stdin)."),
      Options.optional
    ),
    json: apiOptions.json
  },
  (options) =>
    Effect.gen(function*() {
      const { url } = yield* resolveUrl(options.url)
      const fromEnv = yield* Effect.orDie(Config.option(Config.nonEmptyString("SWITCHYARD_API_KEY")))
      const key = yield* Option.match(Option.orElse(options.key, () => fromEnv), {
        onSome: (key) => Effect.succeed(key.trim()),
        onNone: () => askKey
      })
      if (key === "") return yield* CliFailure.usage("no API key given")
      // checked against the node first: a wrong URL or key is never saved
      const me = yield* withClient({ url, key }, (client) => client.identity.me())
      const path = yield* writeLogin({ url, api_key: key })
      yield* print(options.json, Me, me, (me) =>
        sanitize(
          `Logged in to ${url} as ${me.user?.email ?? `organization key "${me.key.name}"`} ` +
            `(${me.role_display} in "${me.organization.name}"). Saved to ${path}.`
        ) + "\n")
    }).pipe(reportFailure(options.json))
).pipe(
  Command.withDescription(
    "Store the node's URL and an API key in the login file, after checking them with GET /v1/me. " +
      "Other commands then use them (for that URL only). The file is written with mode 0600."
  )
)

export const loginEnvironment: ReadonlyArray<EnvironmentEntry> = [
  ["SWITCHYARD_URL", "The URL when --url is not given (then the login file's, then http://localhost:8080)."],
  ["SWITCHYARD_API_KEY", "The key when --key is not given (else it is asked for, or read from stdin)."],
  ["XDG_CONFIG_HOME", "The login file is $XDG_CONFIG_HOME/switchyard/config.json (default ~/.config)."],
  ["NO_COLOR", "Set (not empty): no colour. Output that is not a terminal is never coloured."]
]
