import { Config, Console, Context, Effect, Layer } from "effect"
import { ExitCode } from "./CliFailure.js"

/**
 * Where the CLI writes and whether it may colour it: colour only on a terminal, and never with `NO_COLOR` set
 * (no-color.org). Everything the CLI prints goes through here, @effect/cli's own help and errors included (see
 * `cliConsole`), so one policy holds for all of it.
 */
export interface TerminalShape {
  readonly colourOut: boolean
  readonly colourErr: boolean
  /** Standard error is a terminal: progress may redraw one line there. */
  readonly interactiveErr: boolean
  /** `--json` is on the command line: errors, the argument parser's included, are JSON envelopes on stderr. */
  readonly json: boolean
  readonly out: (text: string) => void
  readonly err: (text: string) => void
}

export class Terminal extends Context.Tag("switchyard/cli/Terminal")<Terminal, TerminalShape>() {
  static readonly layer = Layer.effect(
    Terminal,
    Effect.map(
      Config.string("NO_COLOR").pipe(Config.withDefault("")),
      (noColor): TerminalShape => {
        const allowed = noColor === ""
        return {
          colourOut: allowed && process.stdout.isTTY === true,
          colourErr: allowed && process.stderr.isTTY === true,
          interactiveErr: process.stderr.isTTY === true,
          // read from argv, not the parsed options: the parser's own errors come before any are parsed
          json: jsonRequested(process.argv.slice(2)),
          out: (text) => void process.stdout.write(text),
          err: (text) => void process.stderr.write(text)
        }
      }
    )
  )
}

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g

const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g

export const stripAnsi = (text: string) => text.replace(ANSI, "")

/**
 * Text that came from the API (an agent's answer, a name) printed for a person: escape sequences and other
 * control characters removed, so a model's output cannot move the cursor, retitle the window or hide lines.
 */
export const sanitize = (text: string) => text.replace(ANSI, "").replace(CONTROL, "")

const sgr = (code: string) => (on: boolean, text: string) => on ? `\x1b[${code}m${text}\x1b[0m` : text
export const bold = sgr("1")
export const dim = sgr("2")
export const red = sgr("31")
export const green = sgr("32")
export const yellow = sgr("33")

/** An error as the CLI tells every one on stderr: `error: MESSAGE`. */
export const errorLine = (colour: boolean, message: string) => `${red(colour, "error:")} ${message}\n`

/** `--json` among the words before `--` (after it, words are arguments). */
export const jsonRequested = (args: ReadonlyArray<string>) => {
  const end = args.indexOf("--")
  return (end === -1 ? args : args.slice(0, end)).includes("--json")
}

/** A failure the CLI found itself (no API error code) in a `--json` envelope: its code by what went wrong. */
export const cliErrorCode = (exitCode: number) =>
  exitCode === ExitCode.unreachable
    ? "cli_unreachable"
    : exitCode === ExitCode.taskFailed
    ? "cli_task_failed"
    : exitCode === ExitCode.taskUnfinished
    ? "cli_task_unfinished"
    : "cli_usage"

/** With `--json`, an error is the API's envelope `{"error": {code, message, details}}` on one line of stderr. */
export const errorEnvelope = (code: string, message: string, details?: unknown) =>
  JSON.stringify({ error: { code, message, ...(details === undefined ? {} : { details }) } }) + "\n"

/** A usage error (exit 2) as this command line tells errors: a line, or with `--json` an envelope. */
export const usageError = (terminal: TerminalShape, message: string) =>
  terminal.json
    ? errorEnvelope(cliErrorCode(ExitCode.usage), message)
    : errorLine(terminal.colourErr, message)

/**
 * The Console @effect/cli prints help, usage errors and the wizard with: colour stripped where the policy
 * says no, help tidied (src/cli/Help.ts). What goes to Console.error is an error (@effect/cli's usage errors,
 * "Missing argument <AGENT_ID>", printed as bare paragraphs; node commands' refusals): each reads `error: …`.
 */
export const cliConsole = (
  base: Console.Console,
  terminal: TerminalShape,
  tidyHelp: (text: string) => string
): Console.Console => {
  const render = (colour: boolean) => (args: ReadonlyArray<unknown>) =>
    args.map((a) => {
      const text = typeof a === "string" ? tidyHelp(a) : a
      return typeof text === "string" && !colour ? stripAnsi(text) : text
    })
  const out = render(terminal.colourOut)
  const err = render(terminal.colourErr)
  const asError = (args: ReadonlyArray<unknown>) =>
    typeof args[0] !== "string"
      ? args
      : terminal.json
      ? [usageError(terminal, stripAnsi(args.map(String).join(" ")).trim()).trimEnd()]
      : [errorLine(terminal.colourErr, args[0].trim()).trimEnd(), ...args.slice(1)]
  return {
    ...base,
    log: (...args) => base.log(...out(args)),
    info: (...args) => base.info(...out(args)),
    error: (...args) => base.error(...err(asError(args))),
    warn: (...args) => base.warn(...err(args))
  }
}
