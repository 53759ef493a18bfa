import { Effect, type ParseResult, Runtime, Schema } from "effect"
import type { Readable } from "node:stream"
import { InvokeOperation } from "../../schema/Connectors.js"
import { BadRequest, GatewayTimeout, ServiceUnavailable, Unprocessable } from "../../schema/Errors.js"
import { FUNCTION_LIMITS, type FunctionResult } from "../../schema/Functions.js"
import { ConnectionId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { Connections } from "../connectors/Connections.js"
import { upstreamAnswer } from "../mcp/UpstreamAnswer.js"
import { issuesOf } from "../support/Issues.js"
import type { FunctionRow } from "./FunctionRepo.js"
import type { HostFailure, SandboxOutcome } from "./sandbox/SandboxProtocol.js"
import { SandboxPool } from "./SandboxPool.js"

/** The workspace a call's `ctx.files` reaches: the caller's view, or an agent run's. */
export interface FunctionFiles {
  /** A page of 100 names at most; `cursor` is the `next_cursor` of the page before. */
  readonly list: (
    prefix: string | undefined,
    cursor: string | undefined
  ) => Effect.Effect<unknown, { readonly code: string; readonly message: string }>
  readonly read: (
    name: string,
    offset: number | undefined
  ) => Effect.Effect<unknown, { readonly code: string; readonly message: string }>
  readonly write: (
    name: string,
    text: string
  ) => Effect.Effect<unknown, { readonly code: string; readonly message: string }>
}

/**
 * What `ctx.files.list` and `ctx.files.read` resolve to, the same whoever calls (REST, MCP or an agent's run):
 * a function tested over REST must find the same fields in a run.
 */
export const filesListed = (page: {
  readonly items: ReadonlyArray<
    { readonly name: string; readonly size: number; readonly content_type: string; readonly scope: string }
  >
  readonly next_cursor: string | null
}) => ({
  files: page.items.map((f) => ({ name: f.name, size: f.size, content_type: f.content_type, scope: f.scope })),
  next_cursor: page.next_cursor
})

export const fileRead = (r: {
  readonly file: { readonly name: string }
  readonly text: string
  readonly offset: number
  readonly bytes_read: number
  readonly truncated: boolean
}) => ({ name: r.file.name, text: r.text, offset: r.offset, bytes_read: r.bytes_read, truncated: r.truncated })

/** Who a call acts as: connector calls are made and recorded as this principal (with the task, in a run). */
export interface CallScope {
  readonly principal: Principal
  readonly taskId?: string | undefined
  readonly files: FunctionFiles
}

export type CallFailure = BadRequest | Unprocessable | GatewayTimeout | ServiceUnavailable

const MAX_ANSWER_BYTES = 1024 * 1024

const ConnectorCall = Schema.Struct({
  connection_id: ConnectionId,
  operation_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(512)),
  params: Schema.optionalWith(InvokeOperation, { default: () => ({}) })
})
const FilesCall = Schema.Struct({
  prefix: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.maxLength(1024)))),
  cursor: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.maxLength(1024)))),
  name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1024))),
  offset: Schema.optional(Schema.NullOr(Schema.Int.pipe(Schema.nonNegative()))),
  text: Schema.optional(Schema.String)
})
const decodeConnectorCall = Schema.decodeUnknownEither(ConnectorCall, { errors: "first", onExcessProperty: "error" })
const decodeFilesCall = Schema.decodeUnknownEither(FilesCall, { errors: "first" })
const filesSignature: Record<string, string> = {
  "files.list": "ctx.files.list(prefix?, cursor?)",
  "files.read": "ctx.files.read(name, offset?)",
  "files.write": "ctx.files.write(name, text)"
}

const textOf = (body: Readable) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    body.on("data", (c: Buffer) => {
      size += c.length
      if (size <= MAX_ANSWER_BYTES + 1) chunks.push(c)
    })
    body.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    body.once("error", reject)
  })

const failureOf = (e: { readonly code?: string; readonly message: string; readonly _tag?: string }): HostFailure => {
  const status: Record<string, number> = {
    BadRequest: 400,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    Unprocessable: 422,
    BadGateway: 502,
    GatewayTimeout: 504
  }
  const code = e.code ?? "error"
  return { code, message: e.message, ...(e._tag !== undefined && e._tag in status ? { status: status[e._tag]! } : {}) }
}

const invalid = (message: string): HostFailure => ({ code: "validation_failed", message, status: 400 })

/**
 * A `ctx` call's refused arguments: the first issue, named by its argument (the whole parse tree, every union
 * member drawn as a tree, reads as noise in one line).
 */
const argumentIssue = (signature: string, error: ParseResult.ParseError): HostFailure => {
  const issue = issuesOf(error)[0]
  return invalid(`${signature}: \`${issue?.path ?? ""}\`: ${issue?.message ?? "invalid"}`)
}

const sandboxBusy = () =>
  new ServiceUnavailable({
    code: "functions_busy",
    message: "This node's function sandbox has too many calls waiting: try again shortly."
  })

/** A call whose timeout passed while it waited for a worker: the timeout a running call gets, saying why. */
/** The least time a create or update's load check gives code (`load`), whatever its timeout_ms. */
const LOAD_TIMEOUT_FLOOR_MS = 5000

const waitedOut = (timeoutMs: number) =>
  errorOf({
    ok: false,
    kind: "timeout",
    message: `The function waited for a free sandbox for its whole timeout_ms (${timeoutMs} ms) and did not run: ` +
      "this node's sandbox workers were busy.",
    logs: [],
    logsTruncated: false
  })

/** The REST error of a call that did not return, with its logs in `details`. */
export const errorOf = (outcome: Exclude<SandboxOutcome, { ok: true }>): CallFailure => {
  const details = { logs: outcome.logs, ...(outcome.stack === undefined ? {} : { stack: outcome.stack }) }
  switch (outcome.kind) {
    case "timeout":
      return new GatewayTimeout({ code: "function_timeout", message: outcome.message, details })
    case "memory":
      return Unprocessable.of(outcome.message, "function_memory", details)
    case "output_too_large":
      return Unprocessable.of(outcome.message, "function_output_too_large", details)
    case "invalid_input":
      return BadRequest.of(outcome.message, { issues: outcome.issues ?? [] }, "validation_failed")
    case "error":
      return Unprocessable.of(
        outcome.stack === undefined ? outcome.message : `${outcome.message} (${outcome.stack.split("\n")[0]})`,
        "function_error",
        details
      )
  }
}

/**
 * Running a function, the one way REST, MCP and agents' tools do it: the input checked against its schema and
 * the code run in the sandbox (SandboxPool), with `ctx` calls served here as the scope's principal.
 * Connector calls go through `Connections.invoke` (the egress guard, credentials, role checks and invocation
 * records of REST); answers and arguments cross as JSON text only.
 */
export class FunctionCalls extends Effect.Service<FunctionCalls>()("functions/FunctionCalls", {
  effect: Effect.gen(function*() {
    const pool = yield* SandboxPool
    const connections = yield* Connections
    const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())

    const serve = (scope: CallScope, op: string, argsText: string): Effect.Effect<string, HostFailure> => {
      let args: unknown
      try {
        args = JSON.parse(argsText)
      } catch {
        return Effect.fail(invalid("the call's arguments are not JSON"))
      }
      const json = <A, E extends { readonly message: string }>(effect: Effect.Effect<A, E>) =>
        effect.pipe(
          Effect.map((value) => JSON.stringify(value) ?? "null"),
          Effect.mapError((e) => failureOf(e as never))
        )
      if (op === "connectors.invoke") {
        const decoded = decodeConnectorCall(args)
        if (decoded._tag === "Left") {
          return Effect.fail(argumentIssue(
            "ctx.connectors.invoke(connection_id, operation_id, {body_params, query_params, path_params})",
            decoded.left
          ))
        }
        const { connection_id, operation_id, params } = decoded.right
        return connections.invoke(scope.principal, "_", connection_id, operation_id, params, {
          ...(scope.taskId === undefined ? {} : { taskId: scope.taskId })
        }).pipe(
          Effect.flatMap((upstream) =>
            Effect.map(
              Effect.promise(() => textOf(upstream.body)),
              (text) => upstreamAnswer(upstream.status, upstream.headers["content-type"], text)
            )
          ),
          json
        )
      }
      const decoded = decodeFilesCall(args)
      if (decoded._tag === "Left") {
        return Effect.fail(argumentIssue(filesSignature[op] ?? "ctx.files", decoded.left))
      }
      const f = decoded.right
      switch (op) {
        case "files.list":
          return json(scope.files.list(f.prefix ?? undefined, f.cursor ?? undefined))
        case "files.read":
          return f.name === undefined
            ? Effect.fail(invalid("ctx.files.read(name, offset?): name is required"))
            : json(scope.files.read(f.name, f.offset ?? undefined))
        case "files.write":
          return f.name === undefined || f.text === undefined
            ? Effect.fail(invalid("ctx.files.write(name, text): name and text are required strings"))
            : json(scope.files.write(f.name, f.text))
        default:
          return Effect.fail(invalid(`unknown capability ${op}`))
      }
    }

    /** Runs `row` with `input` (already JSON-compatible) as the scope's principal. */
    const run = (scope: CallScope, row: FunctionRow, input: unknown): Effect.Effect<FunctionResult, CallFailure> =>
      Effect.gen(function*() {
        const inputText = JSON.stringify(input === undefined ? {} : input)
        if (Buffer.byteLength(inputText) > FUNCTION_LIMITS.maxOutputBytes) {
          return yield* BadRequest.of("`input` is larger than 1 MiB of JSON.", undefined, "validation_failed")
        }
        const started = performance.now()
        const outcome = yield* pool.run(
          scope.principal.organizationId,
          {
            code: row.code,
            input: inputText,
            schema: JSON.stringify(row.input_schema),
            timeoutMs: row.timeout_ms,
            memoryMb: row.memory_mb,
            maxOutputBytes: FUNCTION_LIMITS.maxOutputBytes
          },
          (op, args) =>
            runPromise(Effect.either(serve(scope, op, args))).then((r) =>
              r._tag === "Right" ? { ok: true as const, value: r.right } : { ok: false as const, error: r.left }
            )
        )
        const duration_ms = Math.round((performance.now() - started) * 1000) / 1000
        if (outcome === "busy") {
          return yield* sandboxBusy()
        }
        if (outcome === "expired") return yield* waitedOut(row.timeout_ms)
        if (!outcome.ok) return yield* errorOf(outcome)
        return {
          output: JSON.parse(outcome.output) as unknown,
          logs: outcome.logs,
          logs_truncated: outcome.logsTruncated,
          duration_ms,
          version: row.version
        }
      })

    /**
     * Whether `code` loads as a function: compiled, its module evaluated and its default export a function, in
     * the sandbox as a call would, with nothing called (a create or update refuses code that would fail every
     * call). Its top-level code gets the function's memory limit, no `ctx`, and its timeout but at least
     * LOAD_TIMEOUT_FLOOR_MS: on a busy node, loading alone (a worker to start, the module to compile) can take
     * longer than a short timeout_ms, and that says nothing about the code; code that never finishes loading
     * is still refused.
     */
    const load = (
      organizationId: string,
      code: string,
      limits: { readonly timeoutMs: number; readonly memoryMb: number }
    ) =>
      Effect.gen(function*() {
        const timeoutMs = Math.max(limits.timeoutMs, LOAD_TIMEOUT_FLOOR_MS)
        const outcome = yield* pool.run(
          organizationId,
          { code, input: "null", schema: "{}", ...limits, timeoutMs, maxOutputBytes: 16, loadOnly: true },
          () => Promise.resolve({ ok: false, error: invalid("no capability is served while code loads") })
        )
        if (outcome === "busy") {
          return yield* sandboxBusy()
        }
        if (outcome === "expired") {
          // the code was never loaded: nothing is wrong with it
          return yield* new ServiceUnavailable({
            code: "functions_busy",
            message: `No sandbox was free to load the code within ${timeoutMs} ms: ` +
              "try again shortly."
          })
        }
        if (outcome.ok) return
        const where = outcome.stack === undefined ? "" : ` (${outcome.stack.split("\n")[0]})`
        return yield* BadRequest.of(
          `\`code\` does not load as a function: ${outcome.message}${where}`,
          { message: outcome.message, ...(outcome.stack === undefined ? {} : { stack: outcome.stack }) },
          "invalid_code"
        )
      })

    return { run, load } as const
  }),
  dependencies: [SandboxPool.Default]
}) {}
