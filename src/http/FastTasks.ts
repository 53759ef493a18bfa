import { Effect, Exit, Layer, ParseResult, Runtime, Schema } from "effect"
import type * as Http from "node:http"
import { InvokeAgent, type TaskFields, taskJson } from "../../schema/Agents.js"
import { taskLocation } from "../../schema/AgentsApi.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { AgentsLive } from "../agents/AgentsLive.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { acceptsEventStream } from "../events/EventStreamResponse.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { Tasks } from "../tasks/Tasks.js"
import { type Exchange, FastEdge } from "./FastEdge.js"
import { parseJsonBody } from "./JsonBody.js"
import { NodeRequestGate } from "./NodeRequestGate.js"
import { validationError } from "./RequestPipeline.js"

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
    const edge = yield* FastEdge
    const authenticator = yield* ApiKeyAuthenticator
    const tasks = yield* Tasks
    const runtime = yield* Effect.runtime<never>()
    const runExit = Runtime.runPromiseExit(runtime)

    const found = (task: TaskFields): Reply => ({ status: 200, body: taskJson(task) })

    /** One request, answered with a reply or by running an effect (the shared edge: FastEdge.ts). */
    class Call {
      readonly exchange: Exchange
      constructor(req: Http.IncomingMessage, res: Http.ServerResponse, principal: Principal) {
        this.exchange = edge.begin(req, res, principal.organizationId)
      }

      reply(reply: Reply) {
        this.exchange.json(reply.status, reply.body, reply.headers)
      }

      run<A>(effect: Effect.Effect<A, unknown>, toReply: (a: A) => Reply) {
        void runExit(Effect.annotateLogs(effect, "request_id", this.exchange.requestId)).then((exit) =>
          Exit.isSuccess(exit) ? this.reply(toReply(exit.value)) : this.exchange.fail(exit.cause)
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
      const call = serve(req, res, principal)
      call.exchange.readBody((text) => {
        const parsed = parseJsonBody(text)
        const idempotencyKey = req.headers["idempotency-key"] as string | undefined
        if (!parsed.ok) return call.exchange.error(400, parsed.error)
        const decoded = decodeInvoke(parsed.value)
        if (decoded._tag === "Left") {
          const issues = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
          return call.exchange.error(400, validationError(issues))
        }
        call.run(
          tasks.invoke(principal, agentId, decoded.right, { asynchronous, idempotencyKey, source: "api" }),
          ({ accepted, task }): Reply =>
            accepted
              ? { status: 202, body: taskJson(task), headers: { location: taskLocation(task.id) } }
              : { status: 200, body: taskJson(task) }
        )
      })
    }

    if (!config.taskFastPath) return
    gate.setFastPath((req, res) => {
      const url = req.url ?? ""
      if (req.method === "GET") {
        const match = GET_TASK.exec(url)
        if (match === null) return false
        const wait = match[2] === undefined ? 0 : Number(match[2])
        if (wait > 60 || !edge.takes(req)) return false
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
      if (!edge.takes(req, { bodyRequired: true })) return false
      // a streamed invoke (issue 22) is the general stack's (src/events/InvokeStream.ts)
      if (match[2] !== "true" && acceptsEventStream(req.headers["accept"])) return false
      const principal = authenticator.peek(req.headers["x-api-key"] as string | undefined)
      if (principal === undefined) return false
      invoke(req, res, principal, match[1] as AgentId, match[2] === "true")
      return true
    })
  })
).pipe(Layer.provide([AgentsLive, ApiKeyAuthenticator.Default, FastEdge.Default]))
