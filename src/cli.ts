import { Command, Options } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { ConfigError, Console, Duration, Effect, Layer, Logger, LogLevel } from "effect"
import { auditCommand } from "./audit/AuditCommand.js"
import { SwitchyardConfig } from "./config/SwitchyardConfig.js"
import { DatabaseForCommandLive } from "./db/Database.js"
import { migrate } from "./db/Migrations.js"
import { nodeLogger } from "./http/AccessLog.js"
import { Identity } from "./identity/Identity.js"
import { NodeLive } from "./Node.js"
import { usersCommand } from "./oauth/UsersCommand.js"

const CommandDatabase = DatabaseForCommandLive.pipe(Layer.provideMerge(SwitchyardConfig.layer))

const serve = Command.make("serve", {}, () => Layer.launch(NodeLive)).pipe(
  Command.withDescription(
    "Run a node: REST API, MCP, cluster runner (and the embedded PostgreSQL unless DATABASE_URL is set)."
  )
)

const migrateCommand = Command.make("migrate", {}, () =>
  migrate.pipe(
    Effect.zipRight(Console.log("Migrations applied.")),
    Effect.provide(CommandDatabase)
  )).pipe(Command.withDescription("Apply database migrations (ours and the cluster's) and exit."))

const bootstrap = Command.make(
  "bootstrap",
  {
    org: Options.text("org").pipe(Options.withDescription("Name of the new organization.")),
    email: Options.text("email").pipe(Options.withDescription("E-mail of its Super admin.")),
    json: Options.boolean("json").pipe(Options.withDescription("Print {organization_id, user_id, api_key} as JSON."))
  },
  ({ email, json, org }) =>
    Effect.gen(function*() {
      yield* migrate
      const identity = yield* Identity
      const created = yield* identity.bootstrap({ organization: org, email })
      yield* json
        ? Console.log(JSON.stringify(created))
        : Console.log(
          `Created organization ${created.organization_id} ("${org}") with Super admin ${email} (${created.user_id}).\n` +
            `API key (shown once, store it now):\n\n  ${created.api_key}\n`
        )
    }).pipe(Effect.provide(Identity.Default), Effect.provide(CommandDatabase))
).pipe(Command.withDescription("Create an organization with a Super admin and print a new API key."))

const switchyard = Command.make("switchyard").pipe(
  Command.withDescription("Switchyard: a self-hostable platform for AI agents."),
  Command.withSubcommands([serve, migrateCommand, bootstrap, auditCommand, usersCommand])
)

const cli = Command.run(switchyard, { name: "switchyard", version: "0.2.0" })

const logLevel = LogLevel.fromLiteral(
  (process.env["SWITCHYARD_LOG_LEVEL"] ?? "Info").replace(/^./, (c) => c.toUpperCase()) as LogLevel.Literal
)

/** Expected start-up failures get one clear line, not a stack trace. */
const reportStartupFailure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchIf(
      (e: any) =>
        e?._tag === "EmbeddedPostgresError" || ConfigError.isConfigError(e) || e?._tag === "ServeError" ||
        (e?._tag === "SqlError" && /connect/i.test(e.message)),
      (e: any) =>
        Effect.sync(() => {
          const message = ConfigError.isConfigError(e)
            ? `invalid configuration: ${String(e)}`
            : e?._tag === "SqlError"
            ? `cannot reach the database (DATABASE_URL): ${String(e.cause?.message ?? e.message)}`
            : e?._tag === "ServeError"
            ? `cannot listen: ${String(e.cause?.message ?? e)} (check SWITCHYARD_HTTP_PORT / SWITCHYARD_RUNNER_PORT)`
            : e.message
          process.stderr.write(`switchyard: ${message}\n`)
          process.exitCode = 1
        })
    )
  )

/**
 * A stop never hangs: after SIGTERM or SIGINT, what shutdown still does once requests have drained (shards
 * handed back, loops stopped, pools closed) gets HARD_STOP_MS more, then the process exits with 1 (a
 * finalizer waiting on a database that is gone would otherwise hold it until the orchestrator's SIGKILL).
 */
const HARD_STOP_MS = 30_000
const armHardStop = () => {
  let grace = 20_000
  try {
    grace = Duration.toMillis(Duration.decode(process.env["SWITCHYARD_SHUTDOWN_GRACE"] as Duration.DurationInput))
  } catch {
    // unset or not a duration: the default (an invalid one is reported by the configuration)
  }
  setTimeout(() => {
    process.stderr.write(`switchyard: shutdown did not finish within ${grace + HARD_STOP_MS} ms; exiting\n`)
    process.exit(1)
  }, grace + HARD_STOP_MS).unref()
}
process.once("SIGTERM", armHardStop)
process.once("SIGINT", armHardStop)

cli(process.argv).pipe(
  reportStartupFailure,
  Effect.provide(NodeContext.layer),
  // logs on stderr: stdout carries what a command prints (keys, --json output)
  Effect.provide(Logger.replace(Logger.defaultLogger, nodeLogger)),
  Logger.withMinimumLogLevel(logLevel),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
