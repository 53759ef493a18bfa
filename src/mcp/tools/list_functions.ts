import { Effect, Schema } from "effect"
import { FunctionPage } from "../../../schema/Functions.js"
import { optionalPageInput } from "../../../schema/QueryParams.js"
import { Functions } from "../../functions/Functions.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_functions",
  description: "The organization's custom functions at their current versions, with code and input schema " +
    "(GET /v1/functions).",
  input: Schema.Struct(optionalPageInput("Functions", "every function")),
  output: FunctionPage,
  annotations: {
    title: "List custom functions",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (params, { caller }) => Effect.flatMap(Functions, (functions) => functions.list(caller.principal, params))
})
