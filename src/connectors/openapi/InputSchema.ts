import type { JsonObject, Schema } from "./ImportContext.js"
import type { ImportedParameter, JsonSchema } from "./ImportedConnector.js"
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

/** The group of an operation without such parameters (or body): present, and only `{}` fits it. */
const emptyGroup = (): JsonObject => ({ type: "object", properties: {}, additionalProperties: false })

const GROUPS = ["path_params", "query_params", "body_params"] as const

/**
 * Spec 2.5: the three groups are always there, even empty, so a caller can always send
 * `"query_params": {}`. Documents imported before that rule are brought up to it when read.
 */
export const withEveryGroup = (input: JsonSchema): JsonSchema => {
  const properties = (input.properties ?? {}) as JsonObject
  if (GROUPS.every((name) => name in properties)) return input
  const groups = Object.fromEntries(GROUPS.map((name) => [name, properties[name] ?? emptyGroup()]))
  return { ...input, properties: { ...groups, ...properties } }
}

/**
 * The invoke input of an operation (spec 2.5 / 4.5): `path_params`, `query_params` and `body_params`,
 * always (empty when the operation has no such parameters or body), and the always-allowed free-form
 * `headers`. Cookie parameters have no group; callers send them in `headers.cookie`.
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
  properties.path_params = group(path, false)
  if (path.length > 0) required.push("path_params")
  properties.query_params = group(query, false)
  if (query.some(({ parameter }) => parameter.required)) required.push("query_params")
  properties.body_params = body === null ? emptyGroup() : body.schema
  if (body?.required === true) required.push("body_params")
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
