import { Effect, Schema } from "effect"
import { CliFailure, problemsOf } from "./CliFailure.js"
import { bold, dim, errorLine, sanitize, Terminal } from "./Terminal.js"

/** A cell of a table: what the API sent, made safe to print; `null` shows as `-`. */
const cell = (value: unknown, max: number) => {
  const text = value === null || value === undefined || value === ""
    ? "-"
    : sanitize(String(value)).replace(/\s+/g, " ")
  return text.length > max ? text.slice(0, max - 1) + "…" : text
}

/** Columns aligned for people; scripts take `--json`. */
export const table = (
  colour: boolean,
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>,
  max = 60
) => {
  const cells = rows.map((row) => row.map((v) => cell(v, max)))
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)))
  const line = (row: ReadonlyArray<string>) => row.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  return [bold(colour, line(headers)), ...cells.map(line)].join("\n") + "\n"
}

/** `key  value` lines for one record. */
export const fields = (colour: boolean, pairs: ReadonlyArray<readonly [string, unknown]>) => {
  const width = Math.max(...pairs.map(([k]) => k.length))
  return pairs.map(([k, v]) => `${dim(colour, k.padEnd(width))}  ${cell(v, 200)}`).join("\n") + "\n"
}

export const out = (text: string) => Effect.flatMap(Terminal, (t) => Effect.sync(() => t.out(text)))
export const note = (text: string) => Effect.flatMap(Terminal, (t) => Effect.sync(() => t.err(text)))

/** The API's JSON of a decoded value: encoded back with the schema it was decoded with. */
export const printJson = <A, I>(schema: Schema.Schema<A, I>, value: A) =>
  out(JSON.stringify(Schema.encodeSync(schema)(value), null, 2) + "\n")

/** Prints what `human` renders (with the terminal's colour policy), or the API's JSON with `--json`. */
export const print = <A, I>(
  json: boolean,
  schema: Schema.Schema<A, I>,
  value: A,
  human: (value: A, colour: boolean) => string
) => json ? printJson(schema, value) : Effect.flatMap(Terminal, (t) => out(human(value, t.colourOut)))

/**
 * A command's end: a failure is told on stderr (with `--json`, as the API's error envelope) and sets the exit
 * code; nothing is dumped.
 */
export const reportFailure = (json: boolean) => <A, R>(effect: Effect.Effect<A, CliFailure, R>) =>
  effect.pipe(
    Effect.catchTag("CliFailure", (failure) =>
      Effect.flatMap(Terminal, (t) =>
        Effect.sync(() => {
          if (json && failure.code !== undefined) {
            const error = { code: failure.code, message: failure.message, details: failure.details }
            t.err(JSON.stringify({ error }) + "\n")
          } else {
            const code = failure.code === undefined ? "" : ` (${failure.code})`
            t.err(errorLine(t.colourErr, `${sanitize(failure.message)}${code}`))
            const issues = (failure.details as any)?.issues
            if (Array.isArray(issues) && issues.length > 1) {
              for (const i of issues) {
                t.err(`  ${sanitize(String(i?.path ?? ""))}: ${sanitize(String(i?.message ?? ""))}\n`)
              }
            }
          }
          process.exitCode = failure.exitCode
        })))
  )

/**
 * A request body, or the argument `name` (`AGENT_ID`), checked against its schema before it is sent: a mistake
 * is the caller's (exit 2), told here, each problem as `path: message` as the API words it.
 */
export const validated = <A, I>(schema: Schema.Schema<A, I>, value: unknown, name?: string) =>
  Schema.decodeUnknown(schema, { errors: "all" })(value).pipe(
    Effect.mapError((e) => CliFailure.usage(`${name === undefined ? "invalid request: " : ""}${problemsOf(e, name)}`))
  )
