import type { JsonObject, Schema } from "./ImportContext.js"
import type { ImportedParameter, JsonSchema } from "./OpenApiImport.js"
import type { DraftParameter } from "./Parameters.js"
import type { SchemaConverter } from "./SchemaConverter.js"

/** A parameter together with its finished schema, which may refer to `$defs` placed at the root. */
export interface InputParameter {
  readonly parameter: DraftParameter
  readonly schema: Schema
}

const asObject = (schema: Schema): JsonObject => schema === true ? {} : schema === false ? { not: {} } : schema

/** A schema usable on its own: an object, carrying the `$defs` it refers to. */
export const standalone = (converter: SchemaConverter, schema: Schema, at: string): JsonObject => {
  const { defs, roots } = converter.bundle([schema], 0, at)
  const object = asObject(roots[0]!)
  return Object.keys(defs).length === 0 ? object : { ...object, $defs: defs }
}

const propertySchema = ({ parameter, schema }: InputParameter): Schema => {
  if (parameter.description === undefined) return schema
  if (schema === true) return { description: parameter.description }
  if (schema === false) return { not: {}, description: parameter.description }
  return { ...schema, description: parameter.description }
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
  body: { readonly required: boolean; readonly schema: Schema } | null,
  at: string
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
    properties.body_params = body.schema
    if (body.required) required.push("body_params")
  }
  properties.headers = group(headers, { type: "string" })
  if (headers.some(({ parameter }) => parameter.required)) required.push("headers")

  // groups sit two levels below the root, their properties two more
  const names = Object.keys(properties)
  const { defs, roots } = converter.bundle(Object.values(properties) as Array<Schema>, 2, at)
  return {
    type: "object",
    properties: Object.fromEntries(names.map((name, index) => [name, roots[index]])),
    required,
    additionalProperties: false,
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {})
  }
}
