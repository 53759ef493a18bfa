import { ParseResult } from "effect"

/** A decode issue as the API and the CLI report it: a dotted path ("" for the whole value) and a message. */
export interface Issue {
  readonly path: string
  readonly message: string
}

const ACTUAL = ", actual "
const MAX_ACTUAL = 120

/**
 * A message with the value it refused cut to a glimpse: a 1 MB string sent where 200 characters are allowed
 * would otherwise come back whole in the error, once in the message and once per issue.
 */
const glimpse = (message: string): string => {
  const at = message.indexOf(ACTUAL)
  if (at === -1 || message.length - at - ACTUAL.length <= MAX_ACTUAL) return message
  const actual = message.slice(at + ACTUAL.length)
  return `${message.slice(0, at + ACTUAL.length)}${actual.slice(0, 100)}… (${actual.length} characters)`
}

/** An issue under `path`, or at it. */
const within = (path: string, other: string) => path === "" || other === path || other.startsWith(`${path}.`)

/**
 * The issues a person needs: an optional (or nullable) field's "Expected undefined" (or null) beside the real
 * issue at or under it is dropped, as it only says the field could also be left out.
 */
export const meaningfulIssues = <I extends Issue>(issues: ReadonlyArray<I>): Array<I> =>
  issues.filter((i) =>
    !(/^Expected (undefined|null), actual/.test(i.message) && issues.some((o) => o !== i && within(i.path, o.path)))
  )

/** A schema's refusal as the issues a person needs (`meaningfulIssues`), each path under `prefix` if given. */
export const issuesOf = (error: ParseResult.ParseError, prefix: ReadonlyArray<string> = []): Array<Issue> =>
  meaningfulIssues(
    ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => ({
      path: [...prefix, ...issue.path.map(String)].join("."),
      message: glimpse(issue.message)
    }))
  )

export interface DecodeIssue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const WHOLE_BODY = /^Expected [A-Z][A-Za-z]*, actual ([^]*)$/

/**
 * An issue as a person reads it: the whole body refused by its schema's name ("Expected CreateAgent, actual
 * null") says what the body should be instead.
 */
const readable = (path: string, message: string) => {
  const actual = path === "" ? WHOLE_BODY.exec(message)?.[1] : undefined
  if (actual === undefined) return message
  return actual === "null"
    ? "The request has no body (or a null one): send a JSON object."
    : `The request body must be a JSON object, not ${actual}.`
}

export const validationError = (issues: ReadonlyArray<DecodeIssue>) => {
  const fields = meaningfulIssues(
    issues.map((i) => ({ path: i.path.map(String).join("."), message: glimpse(i.message) }))
  )
    .map((f) => ({ path: f.path, message: readable(f.path, f.message) }))
  const first = fields[0]
  const summary = first === undefined
    ? "The request is not valid."
    : first.path === ""
    ? first.message.startsWith("The request") ? first.message : `The request: ${first.message}`
    : `\`${first.path}\`: ${first.message}`
  return {
    code: "validation_failed",
    message: fields.length > 1 ? `${summary} (and ${fields.length - 1} more)` : summary,
    details: { issues: fields }
  }
}
