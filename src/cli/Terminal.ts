import { Config, Console, Context, Effect, Layer } from "effect"

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
    typeof args[0] === "string"
      ? [errorLine(terminal.colourErr, args[0].trim()).trimEnd(), ...args.slice(1)]
      : args
  return {
    ...base,
    log: (...args) => base.log(...out(args)),
    info: (...args) => base.info(...out(args)),
    error: (...args) => base.error(...err(asError(args))),
    warn: (...args) => base.warn(...err(args))
  }
}
