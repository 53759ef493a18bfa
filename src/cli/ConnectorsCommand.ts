import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import {
  CatalogPage,
  ConnectionCreated,
  ConnectorImported,
  CreateConnection,
  CreateConnector
} from "../../schema/Connectors.js"
import { ToolsApi } from "../../schema/ConnectorsApi.js"
import { ConnectorId } from "../../schema/Ids.js"
import { apiOptions, resolveTarget, withClient } from "./ApiTarget.js"
import { CliFailure } from "./CliFailure.js"
import { groupCommand, whoMayCall } from "./Help.js"
import { fields, optional, print, reportFailure, table, validated } from "./Output.js"
import { inRange, nextPageLine, pageOptions, paramRange } from "./ParamRange.js"
import { withProgress } from "./Progress.js"
import { readStdin } from "./Stdin.js"
import { bold, sanitize } from "./Terminal.js"

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`

const size = (bytes: number) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1024 * 1024
    ? `${(bytes / 1024).toFixed(1)} KiB`
    : `${(bytes / 1048576).toFixed(1)} MiB`

const isUrl = (file: string) => /^https?:\/\//i.test(file)

/** A document at a URL, fetched from here (as a browser would), not by the node. */
const fetchDocument = (url: string) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { signal, headers: { accept: "application/json, application/yaml, */*" } })
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      return await response.text()
    },
    catch: (e: any) => CliFailure.usage(`cannot fetch ${url}: ${e?.cause?.message ?? e?.message ?? e}`)
  }).pipe(withProgress(`Downloading ${url}`))

const readDocument = (file: string) =>
  file === "-" ? readStdin : isUrl(file) ? fetchDocument(file) : Effect.try({
    try: () => Fs.readFileSync(file, "utf8"),
    catch: (e: any) =>
      CliFailure.usage(
        e?.code === "ENOENT"
          ? `cannot read ${file}: no such file`
          : e?.code === "EISDIR"
          ? `cannot read ${file}: it is a directory, not a document`
          : `cannot read ${file}: ${e?.message ?? e}`
      )
  })

const importReport = (connector: ConnectorImported, colour: boolean) => {
  const report = connector.import_report
  const lines = [
    fields(colour, [
      ["id", connector.id],
      ["name", connector.name],
      ["operations", connector.total_operations],
      ["auth", connector.auth_types.join(", ")],
      ["server", connector.server_url]
    ]),
    `\n${bold(colour, "Import")}: ${count(report.imported, "operation")} imported, ${report.skipped.length} skipped, ` +
    `${count(report.warnings.length, "warning")}.\n`
  ]
  if (report.skipped.length > 0) {
    lines.push(
      "\n" + table(colour, ["SKIPPED", "PATH", "REASON"], report.skipped.map((s) => [s.method, s.path, s.reason]), 100)
    )
  }
  if (report.warnings.length > 0) {
    lines.push("\n" + table(colour, ["WARNING AT", "MESSAGE"], report.warnings.map((w) => [w.pointer, w.message]), 100))
  }
  return lines.join("")
}

const add = Command.make(
  "add",
  {
    ...apiOptions,
    file: Args.text({ name: "FILE" }).pipe(
      Args.withDescription(
        "An OpenAPI 3.0/3.1 or Swagger 2.0 document, JSON or YAML: a file, an http(s) URL (fetched from here) or " +
          "`-` (standard input)."
      )
    ),
    name: Options.text("name").pipe(
      Options.withPseudoName("NAME"),
      Options.withDescription("Default: the document's info.title."),
      Options.optional
    ),
    description: Options.text("description").pipe(Options.withPseudoName("TEXT"), Options.optional),
    serverUrl: Options.text("server-url").pipe(
      Options.withPseudoName("URL"),
      Options.withDescription("Base URL overriding the document's servers."),
      Options.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const target = yield* resolveTarget(options)
      const text = yield* readDocument(options.file)
      const payload = yield* validated(CreateConnector, {
        spec: text,
        ...optional("name", options.name),
        ...optional("description", options.description),
        ...optional("server_url", options.serverUrl)
      })
      const from = options.file === "-"
        ? "standard input"
        : isUrl(options.file)
        ? Path.basename(new URL(options.file).pathname) || options.file
        : Path.basename(options.file)
      const label = `Importing ${from} ` +
        `(${size(Buffer.byteLength(text))})`
      const connector = yield* withClient(target, (client) => client.tools.createConnector({ payload })).pipe(
        withProgress(label)
      )
      yield* print(options.json, ConnectorImported, connector, importReport)
    }).pipe(reportFailure(options.json))
).pipe(
  Command.withDescription(
    `Register a connector from an OpenAPI document (POST /v1/tools/connectors, ${
      whoMayCall("createConnector")
    }) and show the ` +
      "import report: what was imported, skipped (and why) and warned about. Progress goes to stderr."
  )
)

const limitRange = paramRange(ToolsApi.endpoints.listTools, "limit")

const list = Command.make(
  "list",
  {
    ...apiOptions,
    query: Options.text("query").pipe(
      Options.withPseudoName("TEXT"),
      Options.withDescription("Case-insensitive name search."),
      Options.optional
    ),
    ...pageOptions(limitRange)
  },
  (options) =>
    Effect.gen(function*() {
      const limit = yield* inRange("--limit", limitRange)(options.limit)
      const target = yield* resolveTarget(options)
      const page = yield* withClient(target, (client) =>
        client.tools.listTools({
          urlParams: {
            type: "connector",
            limit,
            ...optional("query", options.query),
            ...optional("cursor", options.cursor)
          }
        }))
      yield* print(options.json, CatalogPage, page, (page, colour) =>
        table(
          colour,
          ["ID", "NAME", "OPERATIONS", "AUTH", "CONNECTIONS", "BUILT-IN"],
          page.items.map((c) => [
            c.id,
            c.name,
            c.total_operations,
            c.auth_types.join(","),
            c.connections.length,
            c.built_in ? "yes" : "no"
          ])
        ) + nextPageLine(page.next_cursor))
    }).pipe(reportFailure(options.json))
).pipe(Command.withDescription("List the connectors of the tool catalog (GET /v1/tools?type=connector)."))

export const connectorsCommand = groupCommand("connectors", "Connectors: add an OpenAPI document, list them.", [
  add,
  list
])

/** A secret given as `-` is read from standard input, so it stays out of the shell's history and `ps`. */
const secret = (value: string) =>
  value === "-" ? Effect.map(readStdin, (s) => s.replace(/\r?\n$/, "")) : Effect.succeed(value)

const credentialsOf = (options: {
  apiKey: Option.Option<string>
  scheme: Option.Option<string>
  token: Option.Option<string>
  username: Option.Option<string>
  password: Option.Option<string>
  clientId: Option.Option<string>
  clientSecret: Option.Option<string>
  scopes: Option.Option<string>
  tokenAuth: Option.Option<"client_secret_basic" | "client_secret_post">
}) =>
  Effect.gen(function*() {
    const given = [options.apiKey, options.token, options.username, options.clientId].filter(Option.isSome).length
    if (given > 1) {
      return yield* CliFailure.usage("give one kind of credentials: --api-key, --token, --username or --client-id")
    }
    if (Option.isSome(options.apiKey)) {
      return { type: "api_key", value: yield* secret(options.apiKey.value), ...optional("scheme", options.scheme) }
    }
    if (Option.isSome(options.token)) return { type: "bearer", token: yield* secret(options.token.value) }
    if (Option.isSome(options.username)) {
      return {
        type: "basic",
        username: options.username.value,
        password: yield* secret(Option.getOrElse(options.password, () => ""))
      }
    }
    if (Option.isSome(options.clientId)) {
      return {
        type: "oauth2",
        client_id: options.clientId.value,
        client_secret: yield* secret(Option.getOrElse(options.clientSecret, () => "")),
        ...Option.match(options.scopes, { onNone: () => ({}), onSome: (s) => ({ scopes: s.split(/[ ,]+/) }) }),
        ...optional("token_endpoint_auth_method", options.tokenAuth)
      }
    }
    return { type: "none" }
  })

const secretOption = (name: string, description: string) =>
  Options.text(name).pipe(
    Options.withPseudoName("VALUE"),
    Options.withDescription(`${description} \`-\` reads it from standard input.`),
    Options.optional
  )

const create = Command.make(
  "create",
  {
    ...apiOptions,
    connector: Args.text({ name: "CONNECTOR_ID" }).pipe(Args.withDescription("The connector (see connectors list).")),
    name: Options.text("name").pipe(Options.withPseudoName("NAME"), Options.withDescription("The connection's name.")),
    scope: Options.choice("scope", ["organizational", "personal"]).pipe(
      Options.withDescription("organizational: the whole organization uses it. personal: yours only."),
      Options.withDefault("organizational" as const)
    ),
    serverUrl: Options.text("server-url").pipe(
      Options.withPseudoName("URL"),
      Options.withDescription("Where this connection's API is."),
      Options.optional
    ),
    apiKey: secretOption("api-key", "An API key credential."),
    scheme: Options.text("scheme").pipe(
      Options.withPseudoName("NAME"),
      Options.withDescription("With --api-key: the document's security scheme, when it has several."),
      Options.optional
    ),
    token: secretOption("token", "A bearer token credential."),
    username: Options.text("username").pipe(
      Options.withPseudoName("USER"),
      Options.withDescription("Basic auth user name."),
      Options.optional
    ),
    password: secretOption("password", "Basic auth password."),
    clientId: Options.text("client-id").pipe(
      Options.withPseudoName("ID"),
      Options.withDescription("OAuth2 client id."),
      Options.optional
    ),
    clientSecret: secretOption("client-secret", "OAuth2 client secret."),
    scopes: Options.text("scopes").pipe(
      Options.withPseudoName("SCOPES"),
      Options.withDescription("OAuth2 scopes, comma-separated."),
      Options.optional
    ),
    tokenAuth: Options.choice("token-auth", ["client_secret_basic", "client_secret_post"]).pipe(
      Options.withDescription(
        "How the OAuth2 client authenticates at the token endpoint: an HTTP Basic header (the default) or " +
          "client_id and client_secret in the form, for providers that accept only that."
      ),
      Options.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const target = yield* resolveTarget(options)
      const connector_id = yield* validated(ConnectorId, options.connector, "CONNECTOR_ID")
      const payload = yield* validated(CreateConnection, {
        name: options.name,
        access_scope: options.scope,
        credentials: yield* credentialsOf(options),
        ...optional("server_url", options.serverUrl)
      })
      const created = yield* withClient(target, (client) =>
        client.tools.createConnection({ path: { connector_id }, payload }))
      yield* print(options.json, ConnectionCreated, created, (c, colour) =>
        fields(colour, [
          ["id", c.id],
          ["name", c.name],
          ["connector", c.connector_id],
          ["scope", c.access_scope],
          ["auth", c.auth_type],
          ["status", c.status],
          ["server", c.server_url]
        ]) +
        (c.connector_page_url === undefined
          ? ""
          : `\nAuthorize it in a browser:\n\n  ${sanitize(c.connector_page_url)}\n`))
    }).pipe(reportFailure(options.json))
).pipe(
  Command.withDescription(
    "Connect a connector (POST /v1/tools/connectors/{id}/connections) with credentials: --api-key, --token, " +
      "--username/--password or --client-id/--client-secret (none: no credentials). An OAuth2 connection " +
      "prints the page where a person authorizes it."
  )
)

export const connectionsCommand = groupCommand("connections", "Connections of connectors: create.", [create])
