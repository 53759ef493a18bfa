import { Command, Options } from "@effect/cli"
import { Console, Effect, Layer, Option } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { auditCommand } from "../audit/AuditCommand.js"
import { config, SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { DatabaseForCommandLive } from "../db/Database.js"
import { migrate } from "../db/Migrations.js"
import { Identity } from "../identity/Identity.js"
import { NodeLive } from "../Node.js"
import { usersCommand } from "../oauth/UsersCommand.js"
import { withProgress } from "./Progress.js"
import { Terminal } from "./Terminal.js"

const CommandDatabase = DatabaseForCommandLive.pipe(Layer.provideMerge(SwitchyardConfig.layer))

/**
 * How a node's start is told: on a terminal as lines for a person; elsewhere (a container's log) as log
 * lines like the rest of stderr, so log collectors keep reading JSON.
 */
const announce = (text: string) =>
  Effect.flatMap(
    Terminal,
    (t) => t.interactiveErr ? Effect.sync(() => t.err(`switchyard: ${text}\n`)) : Effect.logInfo(text)
  )

const startLabel = Effect.map(config, (settings) => {
  if (Option.isSome(settings.databaseUrl)) return "starting the node (DATABASE_URL)"
  const cluster = Path.join(Path.resolve(settings.dataDir), "pg")
  return Fs.existsSync(Path.join(cluster, "PG_VERSION"))
    ? `starting the embedded PostgreSQL (${cluster}) and the node`
    : `first start: creating the embedded PostgreSQL database in ${cluster} (this takes a few seconds), ` +
      "then applying migrations"
})

export const serveCommand = Command.make("serve", {}, () =>
  Effect.gen(function*() {
    const started = Date.now()
    yield* announce(yield* startLabel)
    const ready = Layer.effectDiscard(
      Effect.suspend(() => announce(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`))
    )
    // the last line of a stop, once everything is closed (shards handed back, PostgreSQL stopped): a log reader
    // tells a clean stop from a killed node by it
    let signalled = 0
    const onSignal = () => void (signalled ||= Date.now())
    process.once("SIGTERM", onSignal).once("SIGINT", onSignal)
    yield* Layer.launch(Layer.provide(ready, NodeLive)).pipe(
      Effect.onInterrupt(() =>
        Effect.suspend(() =>
          announce(
            `stopped${signalled === 0 ? "" : ` (shutdown took ${((Date.now() - signalled) / 1000).toFixed(1)} s)`}`
          )
        )
      )
    )
  })).pipe(
    Command.withDescription(
      "Run a node: REST API, MCP, cluster runner (and the embedded PostgreSQL unless DATABASE_URL is set). " +
        "Every setting is an environment variable, listed below with its default (meanings: " +
        "docs/reference/configuration.md). Progress of the start (first start, migrations) goes to stderr."
    )
  )

export const migrateCommand = Command.make("migrate", {}, () =>
  migrate.pipe(
    withProgress("Applying migrations"),
    Effect.zipRight(Console.log("Migrations applied.")),
    Effect.provide(CommandDatabase)
  )).pipe(
    Command.withDescription(
      "Apply database migrations (ours and the cluster's) and exit. Next to a running embedded node, uses its PostgreSQL."
    )
  )

export const bootstrapCommand = Command.make(
  "bootstrap",
  {
    org: Options.text("org").pipe(
      Options.withPseudoName("NAME"),
      Options.withDescription("Name of the new organization.")
    ),
    email: Options.text("email").pipe(
      Options.withPseudoName("EMAIL"),
      Options.withDescription("E-mail of its Super admin.")
    ),
    json: Options.boolean("json").pipe(Options.withDescription("Print {organization_id, user_id, api_key} as JSON."))
  },
  ({ email, json, org }) =>
    Effect.gen(function*() {
      yield* withProgress("Applying migrations")(migrate)
      const identity = yield* Identity
      const created = yield* identity.bootstrap({ organization: org, email })
      yield* json
        ? Console.log(JSON.stringify(created))
        : Console.log(
          `Created organization ${created.organization_id} ("${org}") with Super admin ${email} (${created.user_id}).\n` +
            `API key (shown once, store it now):\n\n  ${created.api_key}\n`
        )
    }).pipe(Effect.provide(Identity.Default), Effect.provide(CommandDatabase))
).pipe(
  Command.withDescription(
    "Create an organization with a Super admin and print a new API key (talks to the database, not the API)."
  )
)

/** The node's own commands, before the client's in the command list. */
export const nodeCommands = [serveCommand, migrateCommand, bootstrapCommand] as const

/** Operators' commands on the database, after the client's. */
export const operatorCommands = [auditCommand, usersCommand] as const
