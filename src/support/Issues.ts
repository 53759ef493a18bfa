import { ParseResult } from "effect"
import { BadRequest } from "../../schema/Errors.js"

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

const EXPECTED = /^Expected ([^]*?), actual ([^]*)$/

/**
 * A union's refusal comes as one issue per member (`Expected "day", actual "week"`, then `"month"`, `"total"`):
 * one issue naming every accepted value (`Expected "day" | "month" | "total", actual "week"`) says what to send.
 */
const alternativesTogether = <I extends Issue>(issues: ReadonlyArray<I>): Array<I> => {
  const merged: Array<I> = []
  for (const issue of issues) {
    const [, expected, actual] = EXPECTED.exec(issue.message) ?? []
    const at = actual === undefined
      ? -1
      : merged.findIndex((o) => o.path === issue.path && EXPECTED.exec(o.message)?.[2] === actual)
    if (at === -1) {
      merged.push(issue)
    } else {
      const [, before] = EXPECTED.exec(merged[at]!.message)!
      merged[at] = { ...merged[at]!, message: `Expected ${before} | ${expected}, actual ${actual}` }
    }
  }
  return merged
}

/**
 * The issues a person needs: an optional (or nullable) field's "Expected undefined" (or null) beside the real
 * issue at or under it is dropped, as it only says the field could also be left out; a union's members are one.
 */
export const meaningfulIssues = <I extends Issue>(issues: ReadonlyArray<I>): Array<I> =>
  alternativesTogether(
    issues.filter((i) =>
      !(/^Expected (undefined|null), actual/.test(i.message) && issues.some((o) => o !== i && within(i.path, o.path)))
    )
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

/**
 * A `validation_failed` of one issue (`path` "" for the whole request) found by a check of our own, written as
 * the schemas' refusals are: the message names the field, and `details.issues` carries it for programs.
 */
export const invalidField = (path: string, message: string) =>
  new BadRequest(validationError([{ path: path === "" ? [] : [path], message }]))
