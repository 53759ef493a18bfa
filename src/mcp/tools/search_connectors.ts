import { Effect, Schema } from "effect"
import { CatalogPage } from "../../../schema/Connectors.js"
import { ConnectorCatalog } from "../../connectors/ConnectorCatalog.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "search_connectors",
  description: "Search the connector catalog by name, with the connections you can use " +
    "(GET /v1/tools?type=connector).",
  input: Schema.Struct({
    query: Schema.optional(Schema.String).annotations({ description: "Case-insensitive name search." }),
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: CatalogPage,
  annotations: {
    title: "Search connectors",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ cursor, limit, query }, { caller }) =>
    Effect.flatMap(ConnectorCatalog, (catalog) => catalog.list(caller.principal, { query, limit: limit ?? 50, cursor }))
})
