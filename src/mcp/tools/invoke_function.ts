import { Effect, Schema } from "effect"
import { FunctionId, FunctionResult } from "../../../schema/Functions.js"
import { Functions } from "../../functions/Functions.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "invoke_function",
  description: "Run a custom function as you (POST /v1/functions/{function_id}/invoke): `input` is checked against " +
    "its input_schema, the answer is its output, logs and duration. Failures: function_error, function_timeout, " +
    "function_memory, function_output_too_large, validation_failed.",
  input: Schema.Struct({
    function_id: FunctionId,
    input: Schema.optional(Schema.Unknown).annotations({ description: "The function's input (default {})." }),
    version: Schema.optional(Schema.Int.pipe(Schema.positive())).annotations({
      description: "A past version to run (default: the current one)."
    })
  }),
  output: FunctionResult,
  annotations: {
    title: "Invoke a custom function",
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: true
  },
  run: ({ function_id, input, version }, { caller }) =>
    Effect.flatMap(Functions, (functions) => functions.invoke(caller.principal, function_id, input, version))
})
