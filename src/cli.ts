import { type CliApp, CliConfig, Command, ValidationError } from "@effect/cli"
import { Runtime } from "@effect/platform"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { ConfigError, Console, Duration, Effect, Exit, HashSet, Logger } from "effect"
import { agentsCommand } from "./cli/AgentsCommand.js"
import { API_ENVIRONMENT } from "./cli/ApiTarget.js"
import { ExitCode } from "./cli/CliFailure.js"
import { connectionsCommand, connectorsCommand } from "./cli/ConnectorsCommand.js"
import { commandPath, type EnvironmentEntry, groupCommand, tidyHelp } from "./cli/Help.js"
import { keysCommand } from "./cli/KeysCommand.js"
import { loginCommand, loginEnvironment } from "./cli/LoginCommand.js"
import { databaseEnvironment, serveEnvironment } from "./cli/ServeSettings.js"
import { tasksCommand } from "./cli/TasksCommand.js"
import { cliConsole, Terminal, usageError } from "./cli/Terminal.js"
import { unknownCommand } from "./cli/UnknownCommand.js"
import { minimumLogLevel } from "./config/MinimumLogLevel.js"
import { nodeLogger } from "./http/AccessLog.js"

type AnyCommand = Command.Command<any, any, any, any>

const clientCommands = [
  loginCommand,
  keysCommand,
  connectorsCommand,
  connectionsCommand,
  agentsCommand,
  tasksCommand
] as const

/**
 * The commands that talk to a node over the API, and `--version`, load only the client: the node's own code
 * (the server, the database, migrations) is imported for the commands that need it, the root help and unknown
 * commands, which halves a client command's start.
 */
const clientOnly = process.argv[2] === "--version" ||
  (clientCommands as ReadonlyArray<AnyCommand>).some((c) => HashSet.has(Command.getNames(c), process.argv[2] ?? ""))
const commands: readonly [AnyCommand, ...Array<AnyCommand>] = clientOnly
  ? clientCommands
  : await import("./cli/NodeCommands.js").then((node) =>
    [
      ...node.nodeCommands,
      ...clientCommands,
      ...node.operatorCommands
    ] as const
  )

const switchyard = groupCommand(
  "switchyard",
  "Switchyard: a self-hostable platform for AI agents. `switchyard COMMAND --help` shows a command's options " +
    "and the environment variables it reads; `switchyard --version` the version. Exit codes: 0 done, 1 the API " +
    "refused (its message and code are printed), 2 wrong use, 3 the node cannot be reached, 4 the agent's task " +
    "failed, 5 it waits for a person's approval.",
  commands
)

const cli: (args: ReadonlyArray<string>) => Effect.Effect<void, unknown, Terminal | CliApp.CliApp.Environment> = Command
  .run(switchyard, { name: "switchyard", version: "0.2.0", executable: "switchyard" })

/** The environment variables a command reads, for its help. */
const environmentOf = (path: ReadonlyArray<string>): ReadonlyArray<EnvironmentEntry> => {
  switch (path[1]) {
    case "serve":
      return serveEnvironment
    case "migrate":
    case "bootstrap":
    case "audit":
    case "users":
      return databaseEnvironment
    case "login":
      return loginEnvironment
    case undefined:
      return []
    default:
      return API_ENVIRONMENT
  }
}

/**
 * The command line: @effect/cli's own output (help, usage errors) through the same colour policy as ours;
 * a usage error (unknown command, bad option) is its friendly message and exit code 2, never a dump. An
 * unknown command is told here, for the group it was given to (`switchyard agents frob`: the commands of
 * `switchyard agents`), as the parser would name the root's.
 */
const main = (args: ReadonlyArray<string>) =>
  Effect.flatMap(Terminal, (terminal) =>
    Console.consoleWith((base) => {
      const unknown = unknownCommand(switchyard, args.slice(2))
      if (unknown !== undefined) {
        return Effect.sync(() => {
          terminal.err(usageError(terminal, unknown))
          process.exitCode = ExitCode.usage
        })
      }
      const path = commandPath(args.slice(2))
      const help = tidyHelp(path, environmentOf(path), terminal.colourOut)
      return cli(args).pipe(
        Console.withConsole(cliConsole(base, terminal, help)),
        Effect.catchIf(ValidationError.isValidationError, () =>
          Effect.sync(() => {
            process.exitCode = ExitCode.usage
          }))
      )
    }))

/** Expected start-up failures get one clear line, not a stack trace. */
const reportStartupFailure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.catchIf(
      (e: any) =>
        e?._tag === "EmbeddedPostgresError" || ConfigError.isConfigError(e) || e?._tag === "ServeError" ||
        // the cluster runner's listener (SWITCHYARD_RUNNER_PORT), which fails as a socket server, not an HTTP one;
        // the metrics listener (SWITCHYARD_METRICS_PORT) fails as a ServeError, like the API's
        (e?._tag === "SocketServerError" && e.reason === "Open") ||
        (e?._tag === "SqlError" && /connect/i.test(e.message)),
      (e: any) =>
        Effect.sync(() => {
          const message = ConfigError.isConfigError(e)
            ? `invalid configuration: ${String(e)}`
            : e?._tag === "SqlError"
            ? `cannot reach the database (DATABASE_URL): ${String(e.cause?.message ?? e.message)}`
            : e?._tag === "ServeError" || e?._tag === "SocketServerError"
            ? `cannot listen: ${
              String(e.cause?.message ?? e)
            } (check SWITCHYARD_HTTP_PORT / SWITCHYARD_RUNNER_PORT / SWITCHYARD_METRICS_PORT)`
            : e.message
          process.stderr.write(`switchyard: ${message}\n`)
          process.exitCode = 1
        })
    )
  )

/**
 * A stop never hangs: after SIGTERM or SIGINT, what shutdown still does once requests have drained (shards
 * handed back, loops stopped, pools closed) gets SWITCHYARD_SHUTDOWN_HARD_STOP more (30 s), then the process
 * exits with 1 (a finalizer waiting on a database that is gone would otherwise hold it until the
 * orchestrator's SIGKILL). Read from the environment here, as the handler runs outside the configuration.
 */
const durationMs = (name: string, fallback: number) => {
  try {
    return Duration.toMillis(Duration.decode(process.env[name] as Duration.DurationInput))
  } catch {
    // unset or not a duration: the default (an invalid one is reported by the configuration)
    return fallback
  }
}
const armHardStop = () => {
  const after = durationMs("SWITCHYARD_SHUTDOWN_GRACE", 20_000) + durationMs("SWITCHYARD_SHUTDOWN_HARD_STOP", 30_000)
  setTimeout(() => {
    process.stderr.write(`switchyard: shutdown did not finish within ${after} ms; exiting\n`)
    process.exit(1)
  }, after).unref()
}
process.once("SIGTERM", armHardStop)
process.once("SIGINT", armHardStop)

main(process.argv).pipe(
  // SWITCHYARD_LOG_LEVEL holds for every command; a bad one is reported as any other bad setting
  (program) => Effect.flatMap(minimumLogLevel, (level) => Logger.withMinimumLogLevel(program, level)),
  reportStartupFailure,
  Effect.provide(Terminal.layer),
  // the built-in options (--completions, --log-level, --wizard, --version) work but stay out of each help
  Effect.provide(CliConfig.layer({ showBuiltIns: false })),
  Effect.provide(NodeContext.layer),
  // logs on stderr: stdout carries what a command prints (keys, --json output)
  Effect.provide(Logger.replace(Logger.defaultLogger, nodeLogger)),
  NodeRuntime.runMain({
    disablePrettyLogger: true,
    // a client command stopped by Ctrl-C (SIGINT) or SIGTERM exits 130, as shells expect, not 0 ("done");
    // a node stopped so (serve) stops as it should, with 0
    teardown: (exit, onExit) =>
      Runtime.defaultTeardown(
        exit,
        (code) => onExit(code === 0 && clientOnly && Exit.isInterrupted(exit) ? ExitCode.interrupted : code)
      )
  })
)
