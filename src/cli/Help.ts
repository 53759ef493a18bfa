import { Command } from "@effect/cli"
import { Effect } from "effect"
import { Api } from "../../schema/Api.js"
import { operationDocOf, roleOf, whoMay } from "../../schema/OperationDoc.js"
import { ExitCode } from "./CliFailure.js"
import { bold, stripAnsi, Terminal, usageError } from "./Terminal.js"

/**
 * Who may call an operation, in words ("Builder and above"), from the API's own table: the role the server
 * checks and the document states (schema/OperationDoc.ts), so a command's help cannot say another.
 */
export const whoMayCall = (operationId: string) => {
  const doc = operationDocOf(Api, operationId)
  if (doc === undefined) throw new Error(`no operation ${operationId} in the API`)
  return whoMay(roleOf(doc))
}

export type EnvironmentEntry = readonly [name: string, meaning: string]

/** The words of argv naming a command (`audit verify` of `audit verify --json`), after `switchyard`. */
export const commandPath = (args: ReadonlyArray<string>) => {
  const words: Array<string> = ["switchyard"]
  for (const arg of args) {
    if (arg.startsWith("-")) break
    words.push(arg)
  }
  return words
}

// what @effect/cli adds under each option: the usage line above already says it
const TYPE_LINES =
  /^ {2}(A user-defined piece of text\.|A true or false value\.|An integer\.|A floating point number\.|One of the following: .*)\n\n/gm

/**
 * @effect/cli's help, tidied: usage lines read `switchyard audit verify …` (it prints a subcommand's as
 * `$ verify …`), the command list has one command a line with its description under it, the type lines the
 * usage already tells are dropped, and an ENVIRONMENT section lists the variables the command reads.
 */
export const tidyHelp = (
  path: ReadonlyArray<string>,
  environment: ReadonlyArray<EnvironmentEntry>,
  colour: boolean
) =>
(text: string) => {
  if (!/^USAGE$/m.test(stripAnsi(text))) return text
  const usage = text.replace(/^((?:\x1b\[[0-9;]*m)*)\$ (\S+)/gm, (_, codes: string, first: string) => {
    const at = path.indexOf(first)
    return codes + (at >= 0 ? path.slice(0, at + 1).join(" ") : `switchyard ${first}`)
  })
  const commands = usage.replace(
    /^ {2}- (.*?)(?: {2,}(\S.*?))?\s*$/gm,
    (_, line: string, description?: string) =>
      description === undefined ? `  ${line}` : `  ${line}\n      ${description}`
  )
  const tidy = commands.replace(TYPE_LINES, "").replace(/\n{3,}/g, "\n\n").trimEnd()
  if (environment.length === 0) return tidy + "\n"
  const width = Math.max(...environment.map(([name]) => name.length))
  return `${tidy}\n\n${bold(colour, "ENVIRONMENT")}\n\n` +
    environment.map(([name, meaning]) => `  ${name.padEnd(width)}  ${meaning}`).join("\n") + "\n"
}

type AnyCommand = Command.Command<any, any, any, any>

/**
 * A command that only groups others (`keys`, `agents`): run alone it names its commands (exit 2) instead of
 * doing nothing.
 */
export const groupCommand = <const Subcommands extends readonly [AnyCommand, ...Array<AnyCommand>]>(
  name: string,
  description: string,
  subcommands: Subcommands
) =>
  Command.make(name, {}, () =>
    Effect.flatMap(Terminal, (t) =>
      Effect.sync(() => {
        const names = subcommands.flatMap((c) => [...Command.getNames(c)])
        const path = name === "switchyard" ? "switchyard" : `switchyard ${name}`
        t.err(usageError(t, `${path} needs a command: ${names.join(", ")} (see ${path} --help)`))
        process.exitCode = ExitCode.usage
      }))).pipe(Command.withDescription(description), Command.withSubcommands(subcommands))
