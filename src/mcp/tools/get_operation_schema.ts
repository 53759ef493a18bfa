import { Effect, Schema } from "effect"
import { OperationSchema } from "../../../schema/Connectors.js"
import { ConnectionId, ConnectorId } from "../../../schema/Ids.js"
import { Connections } from "../../connectors/Connections.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_operation_schema",
  description: "The JSON Schema of an operation's input: `body_params`, `query_params`, `path_params`, " +
    "`headers` (GET /v1/tools/connectors/{connector_id}/connections/{connection_id}/{operation_id}/schema).",
  input: Schema.Struct({
    connector_id: Schema.Union(ConnectorId, Schema.Literal("_")).annotations({
      description: "The connector id, or `_` to take it from the connection."
    }),
    connection_id: ConnectionId,
    operation_id: Schema.String.annotations({ description: "The operation's `id` or `operationId`." })
  }),
  output: OperationSchema,
  annotations: {
    title: "Get an operation's input schema",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ connection_id, connector_id, operation_id }, { caller }) =>
    Effect.flatMap(
      Connections,
      (connections) => connections.schema(caller.principal, connector_id, connection_id, operation_id)
    )
})
