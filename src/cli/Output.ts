import { Effect, Option, Schema } from "effect"
import { CliFailure, problemsOf } from "./CliFailure.js"
import { bold, cliErrorCode, dim, errorEnvelope, errorLine, sanitize, Terminal } from "./Terminal.js"

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" })

// East Asian Wide and Fullwidth blocks (Hangul Jamo, CJK, kana, Hangul syllables, fullwidth forms)
const WIDE =
  /^[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{20000}-\u{3fffd}]/u
const EMOJI = /\p{Emoji_Presentation}|\p{Extended_Pictographic}\ufe0f|\p{Regional_Indicator}/u
const ZERO = /^[\p{Mn}\p{Me}\u200b-\u200f\u2060\ufeff]*$/u

/** Columns a grapheme takes on a terminal: CJK and emoji two, combining marks none, the rest one. */
const columnsOf = (g: string) => ZERO.test(g) ? 0 : WIDE.test(g) || EMOJI.test(g) ? 2 : 1

/** The columns `text` takes on a terminal (its length counts UTF-16 units: CJK would shift every column after). */
export const displayWidth = (text: string) => {
  let width = 0
  for (const { segment } of graphemes.segment(text)) width += columnsOf(segment)
  return width
}

/** `text` in at most `max` columns, cut between graphemes with `…`. */
const truncate = (text: string, max: number) => {
  if (displayWidth(text) <= max) return text
  let kept = ""
  let width = 0
  for (const { segment } of graphemes.segment(text)) {
    const w = columnsOf(segment)
    if (width + w > max - 1) break
    kept += segment
    width += w
  }
  return kept + "…"
}

const pad = (text: string, width: number) => text + " ".repeat(Math.max(0, width - displayWidth(text)))

/** A cell of a table: what the API sent, made safe to print; `null` shows as `-`. */
const cell = (value: unknown, max: number) => {
  const text = value === null || value === undefined || value === ""
    ? "-"
    : sanitize(String(value)).replace(/\s+/g, " ")
  return truncate(text, max)
}

/** Columns aligned for people (by terminal columns, so wide characters keep them aligned); scripts take `--json`. */
export const table = (
  colour: boolean,
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<unknown>>,
  max = 60
) => {
  const cells = rows.map((row) => row.map((v) => cell(v, max)))
  const widths = headers.map((h, i) => Math.max(displayWidth(h), ...cells.map((r) => displayWidth(r[i]!))))
  const line = (row: ReadonlyArray<string>) => row.map((c, i) => pad(c, widths[i]!)).join("  ").trimEnd()
  return [bold(colour, line(headers)), ...cells.map(line)].join("\n") + "\n"
}

/** `key  value` lines for one record. */
export const fields = (colour: boolean, pairs: ReadonlyArray<readonly [string, unknown]>) => {
  const width = Math.max(...pairs.map(([k]) => k.length))
  return pairs.map(([k, v]) => `${dim(colour, k.padEnd(width))}  ${cell(v, 200)}`).join("\n") + "\n"
}

/** `{ [name]: value }` for an option given, `{}` for one not: a request's optional fields. */
export const optional = <A>(name: string, value: Option.Option<A>) =>
  Option.match(value, { onNone: () => ({}), onSome: (v) => ({ [name]: v }) })

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
          if (json) {
            t.err(errorEnvelope(failure.code ?? cliErrorCode(failure.exitCode), failure.message, failure.details))
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
