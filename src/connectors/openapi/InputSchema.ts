import type { JsonObject, Schema } from "./ImportContext.js"
import type { ImportedParameter, JsonSchema } from "./OpenApiImport.js"
import type { SchemaConverter } from "./SchemaConverter.js"

/** A parameter together with its schema in core form (refs into the connector-wide `$defs`). */
export interface InputParameter {
  readonly parameter: ImportedParameter
  readonly core: Schema
}

const propertySchema = ({ core, parameter }: InputParameter): Schema => {
  if (parameter.description === undefined) return core
  if (core === true) return { description: parameter.description }
  if (core === false) return { not: {}, description: parameter.description }
  return { ...core, description: parameter.description }
}

const group = (parameters: ReadonlyArray<InputParameter>, additionalProperties: Schema): JsonObject => {
  const required = parameters.filter(({ parameter }) => parameter.required).map(({ parameter }) => parameter.name)
  return {
    type: "object",
    properties: Object.fromEntries(parameters.map((input) => [input.parameter.name, propertySchema(input)])),
    ...(required.length > 0 ? { required } : {}),
    additionalProperties
  }
}

/**
 * The invoke input of an operation (spec 2.5 / 4.5): `path_params`, `query_params`, `body_params` and
 * `headers`, only the groups that apply plus the always-allowed free-form `headers`. Cookie parameters
 * have no group; callers send them in `headers.cookie`.
 */
export const inputSchema = (
  converter: SchemaConverter,
  parameters: ReadonlyArray<InputParameter>,
  body: { readonly required: boolean; readonly core: Schema } | null
): JsonSchema => {
  const inLocation = (location: ImportedParameter["in"]) =>
    parameters.filter(({ parameter }) => parameter.in === location)
  const path = inLocation("path")
  const query = inLocation("query")
  const headers = inLocation("header")

  const properties: JsonObject = {}
  const required: Array<string> = []
  if (path.length > 0) {
    properties.path_params = group(path, false)
    required.push("path_params")
  }
  if (query.length > 0) {
    properties.query_params = group(query, false)
    if (query.some(({ parameter }) => parameter.required)) required.push("query_params")
  }
  if (body !== null) {
    properties.body_params = body.core
    if (body.required) required.push("body_params")
  }
  properties.headers = group(headers, { type: "string" })
  if (headers.some(({ parameter }) => parameter.required)) required.push("headers")

  const defs = converter.defsFor(Object.values(properties))
  return {
    type: "object",
    properties,
    required,
    additionalProperties: false,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {})
  }
}
