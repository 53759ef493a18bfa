import { Effect, Schema } from "effect"
import { FunctionPage } from "../../../schema/Functions.js"
import { Functions } from "../../functions/Functions.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_functions",
  description: "The organization's custom functions at their current versions, with code and input schema " +
    "(GET /v1/functions).",
  input: Schema.Struct({}),
  output: FunctionPage,
  annotations: {
    title: "List custom functions",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (_, { caller }) => Effect.flatMap(Functions, (functions) => functions.list(caller.principal))
})
