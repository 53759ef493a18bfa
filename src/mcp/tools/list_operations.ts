import { Effect, Schema } from "effect"
import { Operation } from "../../../schema/Connectors.js"
import { ConnectionId, ConnectorId } from "../../../schema/Ids.js"
import { ConnectorCatalog } from "../../connectors/ConnectorCatalog.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_operations",
  description: "A connector's operations (GET /v1/tools/connectors/{connector_id}/operations).",
  input: Schema.Struct({
    connector_id: ConnectorId,
    connection_id: Schema.optional(ConnectionId),
    query: Schema.optional(Schema.String).annotations({ description: "Filter by name, description or path." })
  }),
  output: Schema.Array(Operation),
  annotations: {
    title: "List a connector's operations",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ connection_id, connector_id, query }, { caller }) =>
    Effect.flatMap(
      ConnectorCatalog,
      (catalog) => catalog.operations(caller.principal, connector_id, { connectionId: connection_id, query })
    )
})
