import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  GatewayTimeoutWire,
  NotFoundWire,
  ServiceUnavailableWire,
  UnprocessableWire
} from "./Errors.js"
import {
  AgentFunction,
  AgentFunctionPage,
  CreateFunction,
  CustomFunction,
  FunctionId,
  FunctionListParams,
  FunctionPage,
  FunctionResult,
  FunctionVersionPage,
  InvokeFunction,
  UpdateFunction
} from "./Functions.js"
import { AgentId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { IntegerParam } from "./QueryParams.js"
import { Authentication } from "./Security.js"

const FunctionPath = Schema.Struct({ function_id: FunctionId })
const AttachPath = Schema.Struct({ agent_id: AgentId, function_id: FunctionId })
const VersionParam = Schema.Struct({
  version: Schema.optional(IntegerParam(1, 1_000_000_000)).annotations({
    description: "A past version (default: the current one)."
  })
})

export class FunctionsApi extends HttpApiGroup.make("functions")
  .add(
    HttpApiEndpoint.get("listFunctions", "/functions")
      .annotateContext(
        operation({ summary: "List custom functions", permission: Policy.anyMember, errors: ["invalid_cursor"] })
      )
      .setUrlParams(FunctionListParams)
      .addSuccess(FunctionPage)
      .annotate(OpenApi.Description, "The organization's custom functions, current versions.")
  )
  .add(
    HttpApiEndpoint.post("createFunction", "/functions")
      .annotateContext(
        operation({
          summary: "Create a custom function",
          permission: Policy.createFunctions,
          errors: ["invalid_input_schema", "invalid_code", "function_name_taken", "functions_busy"]
        })
      )
      .setPayload(CreateFunction)
      .addSuccess(CustomFunction, { status: 201 })
      .addError(ServiceUnavailableWire)
      .annotate(
        OpenApi.Description,
        "Create a custom function, version 1. 400 `invalid_input_schema` when `input_schema` is not a " +
          "JSON Schema; 400 `invalid_code` when `code` does not load as a function (a syntax error, a throw at " +
          "the top level, no default export function: it is loaded in the sandbox, nothing called); 409 " +
          "`function_name_taken` when the name is in use."
      )
  )
  .add(
    HttpApiEndpoint.get("getFunction", "/functions/:function_id")
      .annotateContext(operation({ summary: "Get a custom function", permission: Policy.anyMember, errors: [] }))
      .setPath(FunctionPath)
      .setUrlParams(VersionParam)
      .addSuccess(CustomFunction)
      .annotate(OpenApi.Description, "A function at its current version, or at `?version=`.")
  )
  .add(
    HttpApiEndpoint.get("listFunctionVersions", "/functions/:function_id/versions")
      .annotateContext(operation({ summary: "List a function's versions", permission: Policy.anyMember, errors: [] }))
      .setPath(FunctionPath)
      .addSuccess(FunctionVersionPage)
      .annotate(OpenApi.Description, "Every version of a function, newest first.")
  )
  .add(
    HttpApiEndpoint.patch("updateFunction", "/functions/:function_id")
      .annotateContext(
        operation({
          summary: "Change a custom function",
          permission: Policy.changeFunctions,
          errors: ["invalid_input_schema", "invalid_code", "function_name_taken", "functions_busy"]
        })
      )
      .setPath(FunctionPath)
      .setPayload(UpdateFunction)
      .addSuccess(CustomFunction)
      .addError(ServiceUnavailableWire)
      .annotate(
        OpenApi.Description,
        "Change a function: a new version with the fields given, the rest as they were; it becomes current. " +
          "New `code` is loaded first, as on create (400 `invalid_code`)."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteFunction", "/functions/:function_id")
      .annotateContext(
        operation({ summary: "Delete a custom function", permission: Policy.deleteFunctions, errors: [] })
      )
      .setPath(FunctionPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a function and its versions; agents lose its tool.")
  )
  .add(
    HttpApiEndpoint.post("invokeFunction", "/functions/:function_id/invoke")
      .annotateContext(
        operation({
          summary: "Invoke a custom function",
          permission: Policy.anyMember,
          errors: [
            "function_error",
            "function_memory",
            "function_output_too_large",
            "function_timeout",
            "functions_busy"
          ]
        })
      )
      .setPath(FunctionPath)
      .setUrlParams(VersionParam)
      .setPayload(InvokeFunction)
      .addSuccess(FunctionResult)
      .addError(UnprocessableWire)
      .addError(GatewayTimeoutWire)
      .addError(ServiceUnavailableWire)
      .annotate(
        OpenApi.Description,
        "Run the function in its sandbox, as you: `ctx.connectors.invoke` calls connections with " +
          "your rights. 400 `validation_failed` when `input` fails `input_schema` (nothing runs); 422 " +
          "`function_error` (it threw: message and stack), `function_memory` (past memory_mb), " +
          "`function_output_too_large` (output JSON past 1 MiB); 504 `function_timeout` (past timeout_ms); " +
          "503 `functions_busy` when this node's sandbox queue is full."
      )
  )
  .add(
    HttpApiEndpoint.get("listAgentFunctions", "/agents/:agent_id/functions")
      .annotateContext(operation({ summary: "List an agent's functions", permission: Policy.anyMember, errors: [] }))
      .setPath(Schema.Struct({ agent_id: AgentId }))
      .addSuccess(AgentFunctionPage)
      .annotate(OpenApi.Description, "The functions attached to an agent: each is a tool of its runs.")
  )
  .add(
    HttpApiEndpoint.put("attachFunction", "/agents/:agent_id/functions/:function_id")
      .annotateContext(
        operation({ summary: "Attach a function to an agent", permission: Policy.attachFunctions, errors: [] })
      )
      .setPath(AttachPath)
      .addSuccess(AgentFunction)
      .annotate(
        OpenApi.Description,
        "Attach a function to an agent: its runs get a tool named after the function, with " +
          "`input_schema` as parameters, run as the agent's runs call connectors."
      )
  )
  .add(
    HttpApiEndpoint.del("detachFunction", "/agents/:agent_id/functions/:function_id")
      .annotateContext(
        operation({ summary: "Detach a function from an agent", permission: Policy.detachFunctions, errors: [] })
      )
      .setPath(AttachPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Detach a function from an agent.")
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Custom functions")
  .annotate(
    OpenApi.Description,
    "JavaScript functions run in a WebAssembly sandbox (QuickJS), versioned, invoked over REST and MCP and " +
      "offered to agents as tools; they reach connectors and files only through `ctx`."
  )
{}
