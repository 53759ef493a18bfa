import { Schema } from "effect"
import { AgentId, uuidId } from "./Ids.js"
import { optionalPage, PagedList } from "./QueryParams.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

export const FunctionId = uuidId("FunctionId", "a custom function", "Identifier of a custom function (UUID).")
export type FunctionId = typeof FunctionId.Type

/** Limits of a function: the contract states them, the sandbox enforces them. */
export const FUNCTION_LIMITS = {
  maxTimeoutMs: 30_000,
  defaultTimeoutMs: 5_000,
  minMemoryMb: 16,
  maxMemoryMb: 64,
  defaultMemoryMb: 32,
  /** UTF-8 bytes of `code`, and of `input_schema`'s JSON. */
  maxCodeBytes: 256 * 1024,
  maxSchemaBytes: 64 * 1024,
  /** Output (its JSON) above this is `function_output_too_large`. */
  maxOutputBytes: 1024 * 1024
} as const

export const FunctionName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, {
    message: () => "must be 1-64 letters, digits, _ or -, starting with a letter or _ (it is the agent tool's name)"
  })
).annotations({
  description: "Unique in the organization; an agent it is attached to gets a tool of this name."
})

// A failure names the rule, never the field's description ("Expected <description>, actual <the value>"): that
// would echo a 256 KiB `code` back, twice.
const failsWith = (message: string) => () => ({ message, override: true })

const integerFrom = (min: number, max: number) =>
  Schema.Int.pipe(Schema.between(min, max)).annotations({
    message: failsWith(`must be an integer from ${min} to ${max}`)
  })

const utf8Bytes = (text: string) => new TextEncoder().encode(text).length

const fields = {
  description: Schema.String.pipe(Schema.maxLength(4000)).annotations({
    description: "What the function does: an agent reads it as the tool's description.",
    message: failsWith("must be a string of at most 4000 characters")
  }),
  input_schema: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "JSON Schema (2020-12) of `input`, checked before the function runs. Default `{\"type\":\"object\"}`.",
    message: failsWith("must be a JSON object: a JSON Schema")
  }),
  code: Schema.String.pipe(
    Schema.minLength(1),
    // characters, in the document; no fewer than the bytes, so the byte count below runs on bounded text
    Schema.maxLength(FUNCTION_LIMITS.maxCodeBytes),
    Schema.filter((code) => utf8Bytes(code) <= FUNCTION_LIMITS.maxCodeBytes)
  ).annotations({
    jsonSchema: {}, // JSON Schema counts characters: the document keeps `maxLength` above
    description: "An ES module whose default export is `async (input, ctx) => output`. No import resolves: " +
      "`ctx` is the only way out (`ctx.connectors.invoke`, `ctx.files`, `ctx.log`).",
    message: failsWith(
      `must be the module's text, not empty, at most ${FUNCTION_LIMITS.maxCodeBytes} bytes (256 KiB) of UTF-8`
    )
  }),
  timeout_ms: integerFrom(1, FUNCTION_LIMITS.maxTimeoutMs).annotations({
    description: "Longest a call may take, waiting on `ctx` included (1-30000, default 5000)."
  }),
  memory_mb: integerFrom(FUNCTION_LIMITS.minMemoryMb, FUNCTION_LIMITS.maxMemoryMb).annotations({
    description: "Heap a call may use, in MiB (16-64, default 32)."
  })
}

export const CreateFunction = Schema.Struct({
  name: FunctionName,
  description: Schema.optional(fields.description),
  input_schema: Schema.optional(fields.input_schema),
  code: fields.code,
  timeout_ms: Schema.optional(fields.timeout_ms),
  memory_mb: Schema.optional(fields.memory_mb)
}).annotations({ identifier: "CreateFunction", ...requestBody })
export type CreateFunction = typeof CreateFunction.Type

/** A change: fields left out stay. Every change is a new version. */
export const UpdateFunction = Schema.Struct({
  name: Schema.optional(FunctionName),
  description: Schema.optional(fields.description),
  input_schema: Schema.optional(fields.input_schema),
  code: Schema.optional(fields.code),
  timeout_ms: Schema.optional(fields.timeout_ms),
  memory_mb: Schema.optional(fields.memory_mb)
}).annotations({ identifier: "UpdateFunction", ...requestBody })
export type UpdateFunction = typeof UpdateFunction.Type

export class CustomFunction extends Schema.Class<CustomFunction>("CustomFunction")({
  id: FunctionId,
  name: FunctionName,
  description: Schema.String,
  input_schema: fields.input_schema,
  code: Schema.String,
  timeout_ms: Schema.Int,
  memory_mb: Schema.Int,
  version: Schema.Int.annotations({ description: "The version shown (the current one unless `?version=`)." }),
  current_version: Schema.Int.annotations({ description: "The version invokes run unless they ask for another." }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const FunctionVersion = Schema.Struct({
  version: Schema.Int,
  name: FunctionName,
  description: Schema.String,
  timeout_ms: Schema.Int,
  memory_mb: Schema.Int,
  created_by: Schema.NullOr(Schema.String).annotations({ description: "The user, or null for an organization key." }),
  created_at: Timestamp
}).annotations({ identifier: "FunctionVersion" })

export const FunctionVersionPage = Schema.Struct({
  items: Schema.Array(FunctionVersion).annotations({ description: "Newest first." })
}).annotations({ identifier: "FunctionVersionPage" })

export const FunctionPage = PagedList(
  CustomFunction,
  "FunctionPage",
  "functions",
  "By name without `limit` and `cursor`; a page of them oldest first with either."
)

export const FunctionListParams = Schema.Struct(optionalPage("Functions", "every function"))

export const InvokeFunction = Schema.Struct({
  input: Schema.optional(Schema.Unknown).annotations({
    description: "The function's input, checked against its `input_schema` (default `{}`)."
  })
}).annotations({ identifier: "InvokeFunction", ...requestBody })
export type InvokeFunction = typeof InvokeFunction.Type

export const FunctionResult = Schema.Struct({
  output: Schema.Unknown.annotations({ description: "What the function returned, as JSON (`undefined` is null)." }),
  logs: Schema.Array(Schema.String).annotations({
    description: "Lines written with `ctx.log` (at most 200 lines, 64 KiB, 4 KiB a line)."
  }),
  logs_truncated: Schema.Boolean,
  duration_ms: Schema.Number.annotations({ description: "Time the call took in the sandbox, in milliseconds." }),
  version: Schema.Int.annotations({ description: "The version that ran." })
}).annotations({ identifier: "FunctionResult" })
export type FunctionResult = typeof FunctionResult.Type

export const AgentFunction = Schema.Struct({
  agent_id: AgentId,
  function_id: FunctionId,
  name: FunctionName,
  attached_at: Timestamp
}).annotations({ identifier: "AgentFunction" })

export const AgentFunctionPage = Schema.Struct({
  items: Schema.Array(AgentFunction)
}).annotations({ identifier: "AgentFunctionPage" })
