import { ParseResult } from "effect"

/** A decode issue as the API and the CLI report it: a dotted path ("" for the whole value) and a message. */
export interface Issue {
  readonly path: string
  readonly message: string
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
      message: issue.message
    }))
  )
