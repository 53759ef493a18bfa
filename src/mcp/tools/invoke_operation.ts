import { Context, Effect, Schema } from "effect"
import type { Readable } from "node:stream"
import { InvokeOperation } from "../../../schema/Connectors.js"
import { ConnectionId, ConnectorId } from "../../../schema/Ids.js"
import { Connections } from "../../connectors/Connections.js"
import { OperationInvoker } from "../../connectors/OperationInvoker.js"
import { defineTool } from "../McpTool.js"
import { UpstreamAnswer, upstreamAnswerJson } from "../UpstreamAnswer.js"

const textOf = (body: Readable) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    body.on("data", (c: Buffer) => chunks.push(c))
    body.once("end", () =>
      resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")))
    body.once("error", reject)
  })

/** The target's answer as the tool's result (`fast` builds it with the same function, one promise step fewer). */
const answerOf = (
  upstream: { readonly status: number; readonly headers: Record<string, string | Array<string>> },
  text: Promise<string>
) => text.then((text) => upstreamAnswerJson(upstream.status, upstream.headers["content-type"], text))

export default defineTool({
  name: "invoke_operation",
  description: "Invoke a connector operation on a connection with its stored credentials, as you " +
    "(POST /v1/tools/connectors/{connector_id}/connections/{connection_id}/{operation_id}). The answer is the " +
    "target's status and body.",
  input: Schema.Struct({
    connector_id: Schema.Union(ConnectorId, Schema.Literal("_")).annotations({
      description: "The connector id, or `_` to take it from the connection."
    }),
    connection_id: ConnectionId,
    operation_id: Schema.String.annotations({ description: "The operation's `id` or `operationId`." }),
    ...InvokeOperation.fields
  }),
  output: UpstreamAnswer,
  annotations: {
    title: "Invoke a connector operation",
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: true
  },
  run: ({ connection_id, connector_id, operation_id, ...input }, { caller }) =>
    Effect.gen(function*() {
      const connections = yield* Connections
      const upstream = yield* connections.invoke(caller.principal, connector_id, connection_id, operation_id, input)
      return yield* Effect.promise(() => answerOf(upstream, textOf(upstream.body)))
    }),
  // the same call through the same core (OperationInvoker.call), when the connection is in this node's memory
  fast: ({ connection_id, connector_id, operation_id, ...input }, { caller, onAbort, parentSpan, services }) => {
    const target = Context.get(services, Connections).peekTarget(
      caller.principal,
      connector_id,
      connection_id,
      operation_id
    )
    if (target === undefined) return undefined
    const call = Context.get(services, OperationInvoker).call(
      caller.principal,
      target,
      input,
      parentSpan === undefined ? undefined : { parentSpan }
    )
    onAbort(() => call.abort())
    return call.outcome.then((outcome) =>
      outcome._tag === "Answered"
        ? outcome.body.text().then((text) =>
          ({
            ok: true,
            value: upstreamAnswerJson(outcome.status, outcome.headers["content-type"], text)
          }) as const
        )
        : {
          ok: false,
          error: {
            code: outcome.code,
            message: outcome.message,
            ...(outcome.details === undefined ? {} : { details: outcome.details })
          }
        } as const
    )
  }
})
