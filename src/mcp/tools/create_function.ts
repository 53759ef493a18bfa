import { Effect } from "effect"
import { CreateFunction, CustomFunction } from "../../../schema/Functions.js"
import { Functions } from "../../functions/Functions.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "create_function",
  description: "Create a custom function (POST /v1/functions, Builder+): an ES module whose default export is " +
    "`async (input, ctx) => output`, run in a sandbox; `ctx.connectors.invoke`, `ctx.files` and `ctx.log` are its " +
    "only way out.",
  input: CreateFunction,
  output: CustomFunction,
  annotations: {
    title: "Create a custom function",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(Functions, (functions) => functions.create(caller.principal, input))
})
