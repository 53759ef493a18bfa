import { Effect, Schema } from "effect"
import { InvokeOperation } from "../../../schema/Connectors.js"
import { ConnectionId, ConnectorId } from "../../../schema/Ids.js"
import { Connections } from "../../connectors/Connections.js"
import { orDieOnSql } from "../../http/orDieOnSql.js"
import { defineTool } from "../McpTool.js"
import { UpstreamAnswer, upstreamAnswer } from "../UpstreamAnswer.js"

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
      const text = yield* Effect.promise(async () => {
        const chunks: Array<Buffer> = []
        for await (const chunk of upstream.body) chunks.push(chunk as Buffer)
        return Buffer.concat(chunks).toString("utf8")
      })
      return upstreamAnswer(upstream.status, upstream.headers["content-type"], text)
    }).pipe(orDieOnSql)
})
