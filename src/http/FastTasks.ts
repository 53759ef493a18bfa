import { Cause, Effect, Exit, Layer, Option, ParseResult, Runtime, Schema } from "effect"
import type * as Http from "node:http"
import { InvokeAgent, type TaskFields, taskJson } from "../../schema/Agents.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { AgentsLive } from "../agents/AgentsLive.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { Tasks } from "../tasks/Tasks.js"
import { Drain } from "./Drain.js"
import { errorEnvelope, type ErrorFields, OWN_ERROR_HEADER } from "./ErrorEnvelope.js"
import { statusOfError } from "./ErrorStatus.js"
import { makeFastAccessLog } from "./FastAccessLog.js"
import { parseJsonBody, requestProblem } from "./JsonBody.js"
import { NodeRequestGate } from "./NodeRequestGate.js"
import { requestIdOf, unexpectedFailure, validationError } from "./RequestPipeline.js"

const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
const INVOKE = new RegExp(`^/v1/agents/(${UUID})/invoke(?:\\?asynchronous=(true|false))?$`)
const GET_TASK = new RegExp(`^/v1/tasks/(${UUID})(?:\\?wait=([0-9]{1,2}))?$`)

const decodeInvoke = Schema.decodeUnknownEither(InvokeAgent, { errors: "all" })

interface Reply {
  readonly status: number
  readonly body: unknown
  readonly headers?: Readonly<Record<string, string>>
}

/**
 * Invoking an agent and reading a task (spec 4.6, 4.7) with the HTTP layer in plain Node, for requests
 * whose API key this node has verified recently: the same Tasks service answers, so both stacks give the
 * same answers; only the routing, authentication middleware and response encoding of the general stack
 * are skipped, which cost several times the task's own work. Anything unusual (another query parameter,
 * a body of unknown size, an unverified key) is declined before the body is read and the general stack
 * answers it.
 */
export const FastTasksLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const gate = yield* NodeRequestGate
    const config = yield* SwitchyardConfig
    const drain = yield* Drain
    const authenticator = yield* ApiKeyAuthenticator
    const tasks = yield* Tasks
    const runtime = yield* Effect.runtime<never>()
    const runExit = Runtime.runPromiseExit(runtime)
    const logAccess = yield* makeFastAccessLog

    const found = (task: TaskFields): Reply => ({ status: 200, body: taskJson(task) })

    const errorReply = (status: number, error: ErrorFields, requestId: string): Reply => ({
      status,
      body: errorEnvelope(error, requestId)
    })

    /** What the general stack answers for a failure: our error classes by their status, else 503 or 500. */
    const failureReply = (cause: Cause.Cause<unknown>, requestId: string): Effect.Effect<Reply> => {
      const failure = Option.getOrUndefined(Cause.failureOption(cause)) as
        | (ErrorFields & { readonly _tag: string })
        | undefined
      const status = failure === undefined ? undefined : statusOfError.get(failure._tag)
      if (failure !== undefined && status !== undefined) return Effect.succeed(errorReply(status, failure, requestId))
      return Effect.map(unexpectedFailure(cause, requestId), (answer) => ({
        ...errorReply(answer.status, answer.error, requestId),
        headers: answer.headers
      }))
    }

    /**
     * One request: its id, held open against a drain; answer it with a reply or by running an effect. A
     * class, not closures: nothing is allocated per request beyond the instance.
     */
    class Call {
      readonly started = performance.now()
      readonly requestId: string
      constructor(
        readonly req: Http.IncomingMessage,
        readonly res: Http.ServerResponse,
        readonly principal: Principal
      ) {
        this.requestId = requestIdOf(req.headers["x-request-id"] as string | undefined)
        res.once("close", drain.enter())
      }

      reply(reply: Reply, own = false) {
        const { req, requestId, res } = this
        if (res.destroyed) return
        const body = JSON.stringify(reply.body)
        // a declared length: no chunked framing to write, and the client reads one piece
        const headers: Record<string, string | number> = {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
          "x-request-id": requestId
        }
        if (reply.headers !== undefined) Object.assign(headers, reply.headers)
        if (own) Object.assign(headers, OWN_ERROR_HEADER)
        res.writeHead(reply.status, headers)
        res.end(body)
        logAccess(req, reply.status, this.started, requestId, this.principal.organizationId)
      }

      run<A>(effect: Effect.Effect<A, unknown>, toReply: (a: A) => Reply) {
        void runExit(Effect.annotateLogs(effect, "request_id", this.requestId)).then((exit) =>
          Exit.isSuccess(exit)
            ? this.reply(toReply(exit.value))
            : runExit(failureReply(exit.cause, this.requestId)).then((r) =>
              Exit.isSuccess(r) && this.reply(r.value, true)
            )
        )
      }
    }
    const serve = (req: Http.IncomingMessage, res: Http.ServerResponse, principal: Principal) =>
      new Call(req, res, principal)

    const invoke = (
      req: Http.IncomingMessage,
      res: Http.ServerResponse,
      principal: Principal,
      agentId: AgentId,
      asynchronous: boolean
    ) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("error", () => res.destroy())
      req.on("end", () => {
        const parsed = parseJsonBody(Buffer.concat(chunks).toString("utf8"))
        const idempotencyKey = req.headers["idempotency-key"] as string | undefined
        const call = serve(req, res, principal)
        if (!parsed.ok) return call.reply(errorReply(400, parsed.error, call.requestId), true)
        const decoded = decodeInvoke(parsed.value)
        if (decoded._tag === "Left") {
          const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
          return call.reply(errorReply(400, validationError(issues), call.requestId), true)
        }
        call.run(
          tasks.invoke(principal, agentId, decoded.right, { asynchronous, idempotencyKey, source: "api" }),
          ({ accepted, task }) => ({ status: accepted ? 202 : 200, body: taskJson(task) })
        )
      })
    }

    if (!config.taskFastPath) return
    gate.setFastPath((req, res) => {
      if (drain.draining) return false
      const url = req.url ?? ""
      if (req.method === "GET") {
        const match = GET_TASK.exec(url)
        if (match === null) return false
        const wait = match[2] === undefined ? 0 : Number(match[2])
        if (wait > 60) return false
        const principal = authenticator.peek(req.headers["x-api-key"] as string | undefined)
        if (principal === undefined) return false
        const id = match[1] as TaskId
        const call = serve(req, res, principal)
        const deadline = Date.now() + wait * 1000
        // a task this node runs is answered from what the node knows, without a fiber or a read; past the
        // first stretch of a long poll, the general one waits out the rest
        const cancel = tasks.watchKnown(principal, id, wait * 1000, (task) => {
          if (task === undefined) {
            call.run(tasks.get(principal, id, Math.max(0, deadline - Date.now()) / 1000, true), found)
          } else call.reply(found(task))
        })
        if (cancel === false) call.run(tasks.get(principal, id, wait), found)
        else if (!res.writableEnded) res.once("close", cancel)
        return true
      }
      if (req.method !== "POST") return false
      const match = INVOKE.exec(url)
      if (match === null) return false
      // bodies of a declared size, JSON: anything else is the general stack's to answer
      const length = Number(req.headers["content-length"] ?? "")
      if (req.headers["transfer-encoding"] !== undefined || !(length > 0 && length <= config.maxBodyBytes)) return false
      if (requestProblem(url, req.headers) !== undefined) return false
      const principal = authenticator.peek(req.headers["x-api-key"] as string | undefined)
      if (principal === undefined) return false
      invoke(req, res, principal, match[1] as AgentId, match[2] === "true")
      return true
    })
  })
).pipe(Layer.provide([AgentsLive, ApiKeyAuthenticator.Default]))
