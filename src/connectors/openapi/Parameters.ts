import { type ImportContext, isObject, type JsonObject, pointer, type Schema } from "./ImportContext.js"
import type { ImportedParameter } from "./ImportedConnector.js"
import type { SchemaConverter } from "./SchemaConverter.js"

/** A parameter before its schema is finished (see SchemaConverter). */
export type DraftParameter = Omit<ImportedParameter, "schema">

/** A parameter as declared, before path-level and operation-level lists are merged. */
export type DeclaredParameter =
  | { readonly kind: "parameter"; readonly key: string; readonly parameter: DraftParameter; readonly core: Schema }
  | {
    readonly kind: "body" | "formData"
    readonly key: string
    readonly name: string
    readonly required: boolean
    readonly schema: Schema
    readonly description: string | undefined
    readonly file: boolean
    /** A formData array's collectionFormat, as a form field's style. */
    readonly encoding?: { readonly style: string; readonly explode: boolean }
  }

const LOCATIONS = ["path", "query", "header", "cookie"] as const
type Location = typeof LOCATIONS[number]
/** OAS 3: "If in is header and the name is Accept, Content-Type or Authorization, the definition SHALL be ignored." */
const RESERVED_HEADERS = new Set(["accept", "content-type", "authorization"])
const SWAGGER_SCHEMA_KEYS = [
  "type",
  "format",
  "items",
  "enum",
  "default",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "uniqueItems",
  "x-nullable"
]

const keyOf = (location: string, name: string) => `${location}:${location === "header" ? name.toLowerCase() : name}`

const defaultStyle = (location: Location) => location === "path" || location === "header" ? "simple" : "form"

/** The styles requests are built in (RequestBuilder); tabDelimited is Swagger 2.0's `tsv`. */
const SUPPORTED_STYLES: Readonly<Record<string, ReadonlyArray<string>>> = {
  path: ["simple"],
  header: ["simple"],
  query: ["form", "spaceDelimited", "pipeDelimited", "deepObject", "tabDelimited"],
  cookie: ["form"],
  // a field of a form or multipart body
  body: ["form", "spaceDelimited", "pipeDelimited", "deepObject", "tabDelimited"]
}

export const warnStyle = (ctx: ImportContext, at: string, style: string, location: string, name: string) => {
  if (!SUPPORTED_STYLES[location]?.includes(style)) {
    const fallback = location === "path" || location === "header" ? "simple" : "form"
    const what = location === "body" ? `body field "${name}"` : `${location} parameter "${name}"`
    ctx.warn(at, `unsupported parameter style ${style} for ${what}; sent as ${fallback}`)
  }
}

/** Reads a `parameters` list (path-level or operation-level) of any document version. */
export const declaredParameters = (
  ctx: ImportContext,
  converter: SchemaConverter,
  list: unknown,
  at: string
): Array<DeclaredParameter> => {
  if (list === undefined) return []
  if (!Array.isArray(list)) {
    ctx.warn(at, "parameters is not an array; ignored")
    return []
  }
  const declared = new Map<string, DeclaredParameter>()
  list.forEach((raw, index) => {
    const usedAt = pointer(at, index)
    const resolved = ctx.resolve(raw, usedAt)
    if (resolved === undefined) return
    const parameter = ctx.version === "2.0"
      ? swaggerParameter(ctx, converter, resolved.value, resolved.pointer)
      : openApiParameter(ctx, converter, resolved.value, resolved.pointer)
    if (parameter === undefined) return
    if (declared.has(parameter.key)) {
      ctx.warn(usedAt, `duplicate parameter ${parameter.key.replace(":", " ")}; the first is used`)
      return
    }
    declared.set(parameter.key, parameter)
  })
  return [...declared.values()]
}

/** Operation-level parameters override path-level ones with the same name and location. */
export const mergeParameters = (
  pathLevel: ReadonlyArray<DeclaredParameter>,
  operationLevel: ReadonlyArray<DeclaredParameter>
): Array<DeclaredParameter> => {
  const merged = new Map<string, DeclaredParameter>()
  for (const parameter of [...pathLevel, ...operationLevel]) merged.set(parameter.key, parameter)
  return [...merged.values()]
}

const nameAndLocation = (ctx: ImportContext, raw: unknown, at: string) => {
  if (!isObject(raw)) {
    ctx.warn(at, "parameter is not an object; ignored")
    return undefined
  }
  if (typeof raw.name !== "string" || raw.name === "") {
    ctx.warn(pointer(at, "name"), "parameter has no name; ignored")
    return undefined
  }
  return { raw, name: raw.name, location: raw.in }
}

const withDescription = (raw: JsonObject) => typeof raw.description === "string" ? { description: raw.description } : {}

const openApiParameter = (
  ctx: ImportContext,
  converter: SchemaConverter,
  value: unknown,
  at: string
): DeclaredParameter | undefined => {
  const found = nameAndLocation(ctx, value, at)
  if (found === undefined) return undefined
  const { location, name, raw } = found
  if (!LOCATIONS.includes(location as Location)) {
    ctx.warn(pointer(at, "in"), `parameter "${name}" has unsupported location ${JSON.stringify(location)}; ignored`)
    return undefined
  }
  const where = location as Location
  if (where === "header" && RESERVED_HEADERS.has(name.toLowerCase())) {
    ctx.warn(at, `header parameter "${name}" is ignored (OpenAPI reserves it for content negotiation or security)`)
    return undefined
  }
  let core: Schema = {}
  if (raw.schema !== undefined) {
    core = converter.convert(raw.schema, pointer(at, "schema"))
  } else if (isObject(raw.content)) {
    const [mediaType, media] = Object.entries(raw.content)[0] ?? []
    if (mediaType !== undefined && isObject(media) && media.schema !== undefined) {
      core = converter.convert(media.schema, pointer(at, "content", mediaType, "schema"))
    }
    ctx.warn(pointer(at, "content"), `parameter "${name}" is described by content (${mediaType}); sent as form`)
  }
  const style = typeof raw.style === "string" ? raw.style : defaultStyle(where)
  warnStyle(ctx, pointer(at, "style"), style, where, name)
  const parameter: DraftParameter = {
    name,
    in: where,
    required: where === "path" || raw.required === true,
    style,
    explode: typeof raw.explode === "boolean" ? raw.explode : style === "form",
    ...withDescription(raw)
  }
  return { kind: "parameter", key: keyOf(where, name), parameter, core }
}

/** Swagger 2.0 collectionFormat → OAS 3 style and explode. */
const collectionStyle = (raw: JsonObject, location: Location): { style: string; explode: boolean } => {
  if (raw.type !== "array") return { style: defaultStyle(location), explode: defaultStyle(location) === "form" }
  switch (raw.collectionFormat ?? "csv") {
    case "multi":
      return { style: "form", explode: true }
    case "ssv":
      return { style: "spaceDelimited", explode: false }
    case "pipes":
      return { style: "pipeDelimited", explode: false }
    case "tsv":
      return { style: "tabDelimited", explode: false }
    default:
      return { style: defaultStyle(location), explode: false }
  }
}

const swaggerParameter = (
  ctx: ImportContext,
  converter: SchemaConverter,
  value: unknown,
  at: string
): DeclaredParameter | undefined => {
  const found = nameAndLocation(ctx, value, at)
  if (found === undefined) return undefined
  const { location, name, raw } = found
  const description = typeof raw.description === "string" ? raw.description : undefined
  if (location === "body") {
    const schema = converter.convert(raw.schema ?? {}, pointer(at, "schema"))
    return { kind: "body", key: "body:", name, required: raw.required === true, schema, description, file: false }
  }
  const fields = Object.fromEntries(SWAGGER_SCHEMA_KEYS.filter((key) => key in raw).map((key) => [key, raw[key]]))
  const core = converter.convert(fields, at)
  if (location === "formData") {
    const file = raw.type === "file"
    const required = raw.required === true
    const encoding = raw.type === "array" ? collectionStyle(raw, "query") : undefined
    if (encoding !== undefined) warnStyle(ctx, pointer(at, "collectionFormat"), encoding.style, "body", name)
    return {
      kind: "formData",
      key: keyOf("formData", name),
      name,
      required,
      schema: core,
      description,
      file,
      ...(encoding === undefined ? {} : { encoding })
    }
  }
  if (location !== "path" && location !== "query" && location !== "header") {
    ctx.warn(pointer(at, "in"), `parameter "${name}" has unsupported location ${JSON.stringify(location)}; ignored`)
    return undefined
  }
  if (location === "header" && RESERVED_HEADERS.has(name.toLowerCase())) {
    ctx.warn(at, `header parameter "${name}" is ignored (OpenAPI reserves it for content negotiation or security)`)
    return undefined
  }
  const { explode, style } = collectionStyle(raw, location)
  warnStyle(ctx, pointer(at, "collectionFormat"), style, location, name)
  const parameter: DraftParameter = {
    name,
    in: location,
    required: location === "path" || raw.required === true,
    style,
    explode,
    ...withDescription(raw)
  }
  return { kind: "parameter", key: keyOf(location, name), parameter, core }
}
