import { Options } from "@effect/cli"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Config, Effect, Layer, Option, Ref } from "effect"
import { makeClient } from "../client/index.js"
import { CliFailure, fromClientError } from "./CliFailure.js"
import { readLogin } from "./LoginFile.js"

export const DEFAULT_URL = "http://localhost:8080"

/** The environment variables every API command reads (its help lists them). */
export const API_ENVIRONMENT: ReadonlyArray<readonly [string, string]> = [
  ["SWITCHYARD_URL", `The node's URL (over the login file; default ${DEFAULT_URL}).`],
  ["SWITCHYARD_API_KEY", "The API key (over the login file)."],
  ["XDG_CONFIG_HOME", "Where the login file is: $XDG_CONFIG_HOME/switchyard/config.json (default ~/.config)."],
  ["NO_COLOR", "Set (not empty): no colour. Output that is not a terminal is never coloured."]
]

/** `--url`, `--key` and `--json`: every command that talks to a node takes them. */
export const apiOptions = {
  url: Options.text("url").pipe(
    Options.withPseudoName("URL"),
    Options.withDescription(`The node's URL. Else SWITCHYARD_URL, the login file, ${DEFAULT_URL}.`),
    Options.optional
  ),
  key: Options.text("key").pipe(
    Options.withPseudoName("KEY"),
    Options.withDescription("The API key. Else SWITCHYARD_API_KEY, the login file (for its URL only)."),
    Options.optional
  ),
  json: Options.boolean("json").pipe(
    Options.withDescription("Print the API's JSON instead of a table (for scripts).")
  )
}

export interface ApiTarget {
  readonly url: string
  readonly key: string
}

// the node's banner prints the API's URL (…/v1): taken as the node's, the commands add /v1 themselves
const normalize = (url: string) => url.trim().replace(/\/+$/, "").replace(/\/v1$/, "")
const env = (name: string) => Config.string(name).pipe(Config.option, Config.map(Option.filter((s) => s.trim() !== "")))

/** The URL a command talks to: the flag, SWITCHYARD_URL, the login file, the default. */
export const resolveUrl = (flag: Option.Option<string>) =>
  Effect.gen(function*() {
    const login = yield* readLogin
    const fromEnv = yield* Effect.orDie(env("SWITCHYARD_URL"))
    const url = normalize(Option.getOrElse(
      Option.orElse(Option.orElse(flag, () => fromEnv), () => Option.map(login, (l) => l.url)),
      () => DEFAULT_URL
    ))
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
      return yield* CliFailure.usage(`not an http(s) URL: ${url}`)
    }
    return { url, login }
  })

/**
 * Where and as whom: flags win over SWITCHYARD_URL / SWITCHYARD_API_KEY, which win over the login file. The
 * stored key is sent only to the URL it was stored for, so pointing a command elsewhere never leaks it.
 */
export const resolveTarget = (options: { readonly url: Option.Option<string>; readonly key: Option.Option<string> }) =>
  Effect.gen(function*() {
    const { login, url } = yield* resolveUrl(options.url)
    const stored = Option.filter(login, (l) => normalize(l.url) === url)
    const fromEnv = yield* Effect.orDie(env("SWITCHYARD_API_KEY"))
    const key = Option.orElse(Option.orElse(options.key, () => fromEnv), () => Option.map(stored, (l) => l.api_key))
    if (Option.isNone(key)) {
      return yield* CliFailure.usage(
        Option.isSome(login)
          ? `no API key for ${url} (the login file is for ${login.value.url}): pass --key, set SWITCHYARD_API_KEY, ` +
            "or run `switchyard login --url " + url + "`"
          : "no API key: run `switchyard login`, set SWITCHYARD_API_KEY, or pass --key"
      )
    }
    return { url, key: key.value.trim() } satisfies ApiTarget
  })

/**
 * The fetch client sending `x-api-key` (the REST API refuses `Authorization: Bearer`); with `answered`, it
 * keeps there the status of each answer it gets.
 */
export const keyedHttpClient = (key: string, answered?: Ref.Ref<Option.Option<number>>) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) => {
      const keyed = HttpClient.mapRequest(client, HttpClientRequest.setHeader("x-api-key", key))
      return answered === undefined
        ? keyed
        : HttpClient.tap(keyed, (response) => Ref.set(answered, Option.some(response.status)))
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))

export type ApiClient = Effect.Effect.Success<ReturnType<typeof makeClient>>

/**
 * Runs `f` with the typed client (src/client) for the target; every failure becomes a CliFailure. Whether an
 * answer came tells a request the contract refused (before sending it) from an answer it refused.
 */
export const withClient = <A, E, R>(target: ApiTarget, f: (client: ApiClient) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(Ref.make(Option.none<number>()), (answered) =>
    makeClient({ baseUrl: target.url }).pipe(
      Effect.flatMap(f),
      Effect.provide(keyedHttpClient(target.key, answered)),
      Effect.catchAll((error) =>
        Effect.flatMap(Ref.get(answered), (status) => fromClientError(target.url, status)(error))
      )
    ))
