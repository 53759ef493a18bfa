import { HttpClientError } from "@effect/platform"
import { Data, Effect, Option, ParseResult, Schema } from "effect"
import { ErrorBody } from "../../schema/Errors.js"
import { issuesOf } from "../support/Issues.js"

/** The CLI's exit codes (docs/reference/cli.md "Exit codes"). */
export const ExitCode = {
  ok: 0,
  /** The API refused the request: its error envelope's message and code are printed. */
  api: 1,
  /** Wrong use: unknown command or option, a missing value, no API key, an unreadable file. */
  usage: 2,
  /** The node could not be reached, or what answered is not a Switchyard API this CLI understands. */
  unreachable: 3,
  /** The agent's task ended in `error` or `cancelled`. */
  taskFailed: 4,
  /** The agent's task has not ended: it waits for a person to approve a tool call (or still runs). */
  taskUnfinished: 5,
  /** Stopped by Ctrl-C (SIGINT) or SIGTERM: 128 + SIGINT, as shells report it. */
  interrupted: 130
} as const

/** A failed command: what to tell the person (and, with `--json`, the envelope), and how to exit. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly message: string
  readonly exitCode: number
  /** The API's stable error code, when the API refused. */
  readonly code?: string | undefined
  readonly details?: unknown
}> {
  static usage(message: string) {
    return new CliFailure({ message, exitCode: ExitCode.usage })
  }
  static api(body: ErrorBody["error"]) {
    return new CliFailure({ message: body.message, code: body.code, details: body.details, exitCode: ExitCode.api })
  }
}

/** A schema's refusal as `path: message` items, `name` (`AGENT_ID`) before each path, the meaningful ones. */
export const problemsOf = (error: ParseResult.ParseError, name?: string) =>
  issuesOf(error, name === undefined ? [] : [name])
    .map((i) => i.path === "" ? i.message : `${i.path}: ${i.message}`)
    .join("; ")

/**
 * What answered is not the API this CLI speaks: another server (a wrong --url), or a Switchyard node of
 * another version. Told in one line; the schemas' own report is no use to the person.
 */
export const notUnderstood = (baseUrl: string, status: number | undefined) =>
  new CliFailure({
    message: status === undefined || (status >= 200 && status < 300)
      ? `${baseUrl} did not answer as a Switchyard node of this CLI's version` +
        `${status === undefined ? "" : ` (HTTP ${status})`}; check --url and the node's version`
      : `${baseUrl} did not answer as a Switchyard node (HTTP ${status}); check --url`,
    exitCode: ExitCode.unreachable
  })

const isEnvelopeError = (e: unknown): e is { code: string; message: string; details?: unknown } =>
  typeof e === "object" && e !== null && typeof (e as any).code === "string" &&
  typeof (e as any).message === "string" && typeof (e as any)._tag === "string"

const decodeBody = Schema.decodeUnknownOption(ErrorBody)

/** An answer outside the contract of its endpoint (a 413 or 500 from a proxy, say): its envelope if it has one. */
const fromResponse = (baseUrl: string, error: HttpClientError.ResponseError) =>
  error.response.json.pipe(
    Effect.option,
    Effect.map((json) =>
      Option.match(Option.flatMap(json, decodeBody), {
        onSome: (body) => CliFailure.api(body.error),
        onNone: () => notUnderstood(baseUrl, error.response.status)
      })
    )
  )

/**
 * Every way a call through the typed client fails, as one CliFailure. `answered` is the status of the answer the
 * call got (see `withClient`): the client encodes the request with the contract before it sends it, so a
 * ParseError with no answer yet is the request's (the caller's mistake, exit 2), one after an answer is the
 * answer's. Not given: any ParseError is the answer's.
 */
export const fromClientError =
  (baseUrl: string, answered?: Option.Option<number>) => (error: unknown): Effect.Effect<never, CliFailure> => {
    if (error instanceof CliFailure) return Effect.fail(error)
    if (HttpClientError.isHttpClientError(error)) {
      return error._tag === "RequestError"
        ? Effect.fail(
          new CliFailure({
            message: `cannot reach ${baseUrl}: ${String((error.cause as any)?.cause?.message ?? error.message)}`,
            exitCode: ExitCode.unreachable
          })
        )
        : Effect.flatMap(fromResponse(baseUrl, error), Effect.fail)
    }
    if (ParseResult.isParseError(error)) {
      return Effect.fail(
        answered === undefined
          ? notUnderstood(baseUrl, undefined)
          : Option.match(answered, {
            onNone: () => CliFailure.usage(`invalid request: ${problemsOf(error)}`),
            onSome: (status) => notUnderstood(baseUrl, status)
          })
      )
    }
    if (isEnvelopeError(error)) return Effect.fail(CliFailure.api(error))
    return Effect.die(error)
  }
