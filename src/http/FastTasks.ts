import { Effect, Exit, Layer, ParseResult, Runtime, Schema } from "effect"
import type * as Http from "node:http"
import { Agent } from "undici"
import { InvokeAgent, type TaskFields, taskJson } from "../../schema/Agents.js"
import { taskLocation } from "../../schema/AgentsApi.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { AgentsLive } from "../agents/AgentsLive.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { acceptsEventStream } from "../events/EventStreamResponse.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { ShardDirectory } from "../tasks/ShardDirectory.js"
import { TaskPlacement } from "../tasks/TaskPlacement.js"
import { Tasks } from "../tasks/Tasks.js"
import { type Exchange, FastEdge } from "./FastEdge.js"
import { parseJsonBody } from "./JsonBody.js"
import { NodeRequestGate } from "./NodeRequestGate.js"
import { validationError } from "./RequestPipeline.js"

const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
const INVOKE = new RegExp(`^/v1/agents/(${UUID})/invoke(?:\\?asynchronous=(true|false))?$`)
const GET_TASK = new RegExp(`^/v1/tasks/(${UUID})(?:\\?wait=([0-9]{1,2}))?$`)

const decodeInvoke = Schema.decodeUnknownEither(InvokeAgent, { errors: "all" })

/** Marks a long poll one node handed to another: the receiving node answers it itself. */
const FORWARDED = "x-switchyard-forwarded"
/** What of the running node's answer goes back to the client (the request id and framing are this node's). */
const PASSED_ON = ["content-type", "content-length", "cache-control", "etag", "x-switchyard-error"] as const

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
    const placement = yield* TaskPlacement
    const directory = yield* ShardDirectory
    const runtime = yield* Effect.runtime<never>()
    const runExit = Runtime.runPromiseExit(runtime)

    const found = (task: TaskFields): Reply => ({ status: 200, body: taskJson(task) })

    // to the other nodes of this cluster only (addresses from the shard directory, never from a request)
    const peers = new Agent({ connections: 64, keepAliveTimeout: 30_000, connect: { timeout: 1_000 } })
    /**
     * The request, as it came, to the node that runs its task; its answer back as it is. `fallback` answers
     * here instead when that node cannot be reached (stopped, or not yet listening): it answers nothing yet.
     */
    const forward = (call: Call, owner: string, req: Http.IncomingMessage, waitMs: number, fallback: () => void) => {
      peers.request({
        origin: owner,
        path: req.url ?? "/",
        method: "GET",
        headers: {
          "x-api-key": req.headers["x-api-key"] as string,
          "x-request-id": call.exchange.requestId,
          accept: "application/json",
          [FORWARDED]: "1"
        },
        headersTimeout: waitMs + 10_000,
        bodyTimeout: 10_000
      }).then(
        ({ body, headers, statusCode }) => {
          const out: Record<string, string> = {}
          for (const name of PASSED_ON) {
            const value = headers[name]
            if (typeof value === "string") out[name] = value
          }
          call.exchange.res.once("close", () => body.destroy())
          call.exchange.stream(statusCode, out, body)
        },
        fallback
      )
    }

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
        if (cancel !== false) {
          if (!res.writableEnded) res.once("close", cancel)
          return true
        }
        // a long poll of a task another node runs: that node answers it from memory (once; it never hands on)
        const owner = wait > 0 && req.headers[FORWARDED] === undefined && !placement.isLocal(id)
          ? directory.ownerOf(id)
          : undefined
        if (owner === undefined) call.run(tasks.get(principal, id, wait), found)
        else {
          forward(
            call,
            owner,
            req,
            wait * 1000,
            () => call.run(tasks.get(principal, id, Math.max(0, deadline - Date.now()) / 1000), found)
          )
        }
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
).pipe(
  Layer.provide(ShardDirectory.Default),
  Layer.provide([AgentsLive, ApiKeyAuthenticator.Default, FastEdge.Default])
)
