import { Context, Duration, Effect, Schema } from "effect"
import { InvokeOperation } from "../../../schema/Connectors.js"
import { ConnectionId, ConnectorId } from "../../../schema/Ids.js"
import { SwitchyardConfig, type SwitchyardSettings } from "../../config/SwitchyardConfig.js"
import { Connections } from "../../connectors/Connections.js"
import { Egress } from "../../connectors/Egress.js"
import { OperationInvoker } from "../../connectors/OperationInvoker.js"
import { classifyFailure } from "../../connectors/Upstream.js"
import { defineTool, type ToolFailure } from "../McpTool.js"
import { fitsWhole, UpstreamAnswer, upstreamAnswerJson, upstreamText } from "../UpstreamAnswer.js"

/**
 * A body that fails midway (the connection reset, the connector timeout) is the error REST gives for a call that
 * fails so (upstream_timeout, upstream_unreachable), classified in the same place.
 */
const bodyFailure = (error: unknown, egress: Egress, config: SwitchyardSettings): ToolFailure => {
  const { code, message } = classifyFailure(error, egress, Math.max(1, Duration.toMillis(config.connectorTimeout)))
  return { code, message }
}

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
      const egress = yield* Egress
      const config = yield* SwitchyardConfig
      const upstream = yield* connections.invoke(caller.principal, connector_id, connection_id, operation_id, input)
      const text = yield* Effect.async<string, ToolFailure>((resume) => {
        upstreamText(upstream.body).then(
          (text) => resume(Effect.succeed(text)),
          (error) => resume(Effect.fail(bodyFailure(error, egress, config)))
        )
        // interrupted (the client went away): stop reading, which aborts the upstream response
        return Effect.sync(() => upstream.body.destroy())
      })
      return upstreamAnswerJson(upstream.status, upstream.headers["content-type"], text)
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
        // a body that cannot outgrow the cut is collected whole, without a stream (the hot call's usual case)
        ? (fitsWhole(outcome.headers["content-length"]) ? outcome.body.text() : upstreamText(outcome.body.readable()))
          .then(
            (text) =>
              ({ ok: true, value: upstreamAnswerJson(outcome.status, outcome.headers["content-type"], text) }) as const,
            (error) =>
              ({
                ok: false,
                error: bodyFailure(error, Context.get(services, Egress), Context.get(services, SwitchyardConfig))
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
