import { Effect, Exit, Layer, ParseResult, Redacted, Runtime, Schema } from "effect"
import type * as Http from "node:http"
import { InvokeAgent, type TaskFields, taskJson } from "../../schema/Agents.js"
import { taskLocation } from "../../schema/AgentsApi.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import { AgentsLive } from "../agents/AgentsLive.js"
import { SecretKey } from "../config/SecretKey.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { acceptsEventStream } from "../events/EventStreamResponse.js"
import { ApiKeyAuthenticator } from "../identity/ApiKeyAuthenticator.js"
import { validationError } from "../support/Issues.js"
import { ShardDirectory } from "../tasks/ShardDirectory.js"
import { TaskPlacement } from "../tasks/TaskPlacement.js"
import { Tasks } from "../tasks/Tasks.js"
import { Drain } from "./Drain.js"
import { type Exchange, FastEdge } from "./FastEdge.js"
import { parseJsonBody } from "./JsonBody.js"
import { NodeRequestGate } from "./NodeRequestGate.js"
import { channelToken, makeWaitClient, makeWaitServer, type ReceivedWait, type WaitAnswer } from "./WaitChannel.js"

const UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
const INVOKE = new RegExp(`^/v1/agents/(${UUID})/invoke(?:\\?asynchronous=(true|false))?$`)
const GET_TASK = new RegExp(`^/v1/tasks/(${UUID})(?:\\?wait=([0-9]{1,2}))?$`)

const decodeInvoke = Schema.decodeUnknownEither(InvokeAgent)

/** Marks a long poll this node answers itself, never handing it to another node. */
const FORWARDED = "x-switchyard-forwarded"

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
export const FastTasksLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const gate = yield* NodeRequestGate
    const config = yield* SwitchyardConfig
    const edge = yield* FastEdge
    const authenticator = yield* ApiKeyAuthenticator
    const tasks = yield* Tasks
    const placement = yield* TaskPlacement
    const directory = yield* ShardDirectory
    const drain = yield* Drain

    const found = (task: TaskFields): Reply => ({ status: 200, body: taskJson(task) })

    // long polls handed between nodes (WaitChannel.ts): asked of the running node, answered here
    const token = channelToken(Redacted.value(yield* SecretKey))
    const waits = makeWaitClient(token)
    const taskAnswer = (task: TaskFields): WaitAnswer => ({
      kind: "task",
      status: 200,
      json: JSON.stringify(taskJson(task))
    })
    /**
     * A long poll of a task this node runs, answered from what the node knows (`known`), without a fiber or
     * a read; past the first stretch of the wait, `read` (fresh) waits out the rest. False: not known here.
     */
    const watchHere = (
      principal: Principal,
      id: TaskId,
      waitMs: number,
      known: (task: TaskFields) => void,
      read: (seconds: number) => void
    ) => {
      const deadline = Date.now() + waitMs
      return tasks.watchKnown(principal, id, waitMs, (task) => {
        if (task === undefined) read(Math.max(0, deadline - Date.now()) / 1000)
        else known(task)
      })
    }

    /** A poll another node handed here: answered as that node would have, as the principal it authenticated. */
    const receive = (wait: ReceivedWait) => {
      const { id, principal, requestId } = wait
      const read = (seconds: number, fresh: boolean) =>
        void Runtime.runPromiseExit(edge.runtimeFor(requestId))(tasks.get(principal, id, seconds, fresh)).then(
          (exit) =>
            Exit.isSuccess(exit)
              ? wait.reply(taskAnswer(exit.value))
              : edge.failed(exit.cause, requestId, (status, error, headers) =>
                wait.reply({ kind: "error", status, error, ...(headers === undefined ? {} : { headers }) }))
        )
      const cancel = watchHere(
        principal,
        id,
        wait.waitMs,
        (task) => wait.reply(taskAnswer(task)),
        (seconds) => read(seconds, true)
      )
      if (cancel === false) read(wait.waitMs / 1000, false)
      else wait.onCancel = cancel
    }
    const channels = makeWaitServer(token, drain.isDraining, receive)
    gate.setUpgrade(channels.take)
    // a stopping node closes its channels: the polls they carried are the asking nodes' to answer
    drain.onDrain(channels.closeAll)
    yield* Effect.addFinalizer(() => Effect.sync(channels.closeAll))

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
        this.exchange.run(effect, (a) => this.reply(toReply(a)))
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
        const cancel = watchHere(
          principal,
          id,
          wait * 1000,
          (task) => call.reply(found(task)),
          (seconds) => call.run(tasks.get(principal, id, seconds, true), found)
        )
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
          const deadline = Date.now() + wait * 1000
          const cancelAsk = waits.ask(owner, principal, id, wait * 1000, call.exchange.requestId, (answer) => {
            if (answer.kind === "task") call.exchange.jsonText(answer.status, answer.json)
            else call.exchange.error(answer.status, answer.error, answer.headers)
          }, () => call.run(tasks.get(principal, id, Math.max(0, deadline - Date.now()) / 1000), found))
          if (!res.writableEnded) res.once("close", cancelAsk)
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
