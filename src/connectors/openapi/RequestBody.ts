import { type ImportContext, isObject, type JsonObject, pointer, type Schema } from "./ImportContext.js"
import type { BodyEncoding } from "./ImportedConnector.js"
import { type DeclaredParameter, warnStyle } from "./Parameters.js"
import type { SchemaConverter } from "./SchemaConverter.js"

/** A request body as found, with its schema still in core form (recursive refs point at shared `$defs`). */
export interface DeclaredBody {
  readonly contentType: string
  readonly required: boolean
  readonly core: Schema
  readonly encoding?: Readonly<Record<string, BodyEncoding>>
}

const FORM = "application/x-www-form-urlencoded"
const MULTIPART = "multipart/form-data"

const baseType = (mediaType: string) => mediaType.split(";")[0].trim().toLowerCase()

/** JSON first (any +json), then urlencoded form, then multipart, then whatever comes first. */
const rank = (mediaType: string) => {
  const base = baseType(mediaType)
  if (base === "application/json") return 0
  if (base.endsWith("+json") || base.endsWith("/json")) return 1
  if (base === FORM) return 2
  if (base === MULTIPART) return 3
  return 4
}

export const preferredMediaType = (mediaTypes: ReadonlyArray<string>): string | undefined =>
  mediaTypes.reduce<string | undefined>(
    (best, candidate) => best === undefined || rank(candidate) < rank(best) ? candidate : best,
    undefined
  )

/**
 * The `encoding` of a form or multipart body (OAS 3): each field's style (default `form`, exploded) and its
 * part's content type; only the fields that say something.
 */
const encodingOf = (ctx: ImportContext, media: JsonObject, at: string): Record<string, BodyEncoding> => {
  const encoding: Record<string, BodyEncoding> = {}
  if (!isObject(media.encoding)) return encoding
  for (const [name, raw] of Object.entries(media.encoding)) {
    if (!isObject(raw)) continue
    const style = typeof raw.style === "string" ? raw.style : "form"
    warnStyle(ctx, pointer(at, "encoding", name, "style"), style, "body", name)
    const contentType = typeof raw.contentType === "string" ? raw.contentType.split(",")[0]!.trim() : ""
    encoding[name] = {
      style,
      explode: typeof raw.explode === "boolean" ? raw.explode : style === "form",
      ...(contentType === "" ? {} : { contentType })
    }
  }
  return encoding
}

const withEncoding = (encoding: Record<string, BodyEncoding>) => Object.keys(encoding).length === 0 ? {} : { encoding }

const described = (schema: Schema, description: unknown): Schema =>
  typeof description === "string" && isObject(schema) && schema.description === undefined
    ? { ...schema, description }
    : schema

/** OAS 3 `requestBody`. */
export const openApiBody = (
  ctx: ImportContext,
  converter: SchemaConverter,
  raw: unknown,
  at: string
): DeclaredBody | null => {
  if (raw === undefined) return null
  const resolved = ctx.resolve(raw, at)
  // an unreachable body is kept as "any JSON" so the operation stays usable
  if (resolved === undefined) return { contentType: "application/json", required: false, core: {} }
  const body = resolved.value
  if (!isObject(body)) {
    ctx.warn(resolved.pointer, "requestBody is not an object; ignored")
    return null
  }
  const content = isObject(body.content) ? body.content : {}
  const mediaType = preferredMediaType(Object.keys(content))
  if (mediaType === undefined) {
    ctx.warn(pointer(resolved.pointer, "content"), "requestBody has no content; ignored")
    return null
  }
  const media = content[mediaType]
  const core = isObject(media) && media.schema !== undefined
    ? converter.convert(media.schema, pointer(resolved.pointer, "content", mediaType, "schema"))
    : {}
  const form = [FORM, MULTIPART].includes(baseType(mediaType)) && isObject(media)
  return {
    contentType: mediaType,
    required: body.required === true,
    core: described(core, body.description),
    ...(form ? withEncoding(encodingOf(ctx, media, pointer(resolved.pointer, "content", mediaType))) : {})
  }
}

const stringList = (value: unknown): Array<string> =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []

/** Swagger 2.0: an `in: body` parameter or the `in: formData` fields become the body. */
export const swaggerBody = (
  ctx: ImportContext,
  declared: ReadonlyArray<DeclaredParameter>,
  operation: JsonObject,
  at: string
): DeclaredBody | null => {
  const consumes = stringList(operation.consumes ?? ctx.document.consumes)
  const body = declared.find((parameter) => parameter.kind === "body")
  const fields = declared.filter((parameter) => parameter.kind === "formData")
  if (body !== undefined && body.kind !== "parameter") {
    if (fields.length > 0) ctx.warn(pointer(at, "parameters"), "both body and formData parameters; formData ignored")
    const contentType = preferredMediaType(consumes) ?? "application/json"
    return { contentType, required: body.required, core: described(body.schema, body.description) }
  }
  if (fields.length === 0) return null
  const multipart = fields.some((field) => field.kind === "formData" && field.file) ||
    (consumes.some((type) => baseType(type) === MULTIPART) && !consumes.some((type) => baseType(type) === FORM))
  const properties: JsonObject = {}
  const required: Array<string> = []
  const encoding: Record<string, BodyEncoding> = {}
  for (const field of fields) {
    if (field.kind !== "formData") continue
    properties[field.name] = described(field.schema, field.description)
    if (field.required) required.push(field.name)
    if (field.encoding !== undefined) encoding[field.name] = field.encoding
  }
  return {
    contentType: multipart ? MULTIPART : FORM,
    required: required.length > 0,
    core: { type: "object", properties, ...(required.length > 0 ? { required } : {}) },
    ...withEncoding(encoding)
  }
}
