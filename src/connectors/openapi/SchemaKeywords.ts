import { describe, type JsonObject } from "./ImportContext.js"

/**
 * Validation of the non-subschema keywords of a JSON Schema: a value Ajv would reject while compiling
 * (`minimum: "5"`, an invalid `pattern`) is dropped with a warning rather than breaking the operation.
 */

const JSON_TYPES = new Set(["string", "number", "integer", "boolean", "array", "object", "null"])
const NUMBER_KEYWORDS = new Set(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"])
const COUNT_KEYWORDS = new Set([
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minContains",
  "maxContains"
])
const BOOLEAN_KEYWORDS = new Set(["uniqueItems", "readOnly", "writeOnly", "deprecated"])
const STRING_KEYWORDS = new Set(["title", "description", "format", "contentEncoding", "contentMediaType", "$comment"])
const VALUE_KEYWORDS = new Set(["default", "const"])

export const isValidRegExp = (pattern: string) => {
  try {
    // Ajv compiles patterns with the unicode flag
    new RegExp(pattern, "u")
    return true
  } catch {
    return false
  }
}

export type Warn = (keyword: string, message: string) => void

/** Normalizes `type` (Swagger's `file` becomes a binary string); leaves it out when nothing valid is left. */
export const normalizeType = (value: unknown, out: JsonObject, warn: Warn): void => {
  const given = Array.isArray(value) ? value : [value]
  const types: Array<string> = []
  for (const type of given) {
    const mapped = type === "file" ? "string" : type
    if (typeof mapped === "string" && JSON_TYPES.has(mapped)) {
      if (!types.includes(mapped)) types.push(mapped)
    } else {
      warn("type", `invalid type ${JSON.stringify(type)} ignored`)
    }
  }
  if (types.length === 1) out.type = types[0]
  else if (types.length > 1) out.type = types
  if (given.includes("file") && out.format === undefined) out.format = "binary"
}

/**
 * Copies one scalar keyword from `schema` into `out` when its value is valid. Returns false when the
 * keyword is not a scalar keyword (the caller handles subschemas and drops everything else).
 */
export const copyScalarKeyword = (keyword: string, schema: JsonObject, out: JsonObject, warn: Warn): boolean => {
  const value = schema[keyword]
  const got = typeof value === "number" || typeof value === "string" ? JSON.stringify(value) : describe(value)
  const invalid = (expected: string) => warn(keyword, `invalid ${keyword} (${expected}, got ${got}) ignored`)
  if (NUMBER_KEYWORDS.has(keyword)) {
    if (keyword === "exclusiveMinimum" || keyword === "exclusiveMaximum") {
      // OAS 3.0 / Swagger boolean form: folded into minimum / maximum below
      if (typeof value === "boolean") return true
    }
    if (typeof value !== "number" || !Number.isFinite(value)) invalid("a number")
    else if (keyword === "multipleOf" && value <= 0) invalid("a positive number")
    else if (keyword === "minimum" && schema.exclusiveMinimum === true) out.exclusiveMinimum = value
    else if (keyword === "maximum" && schema.exclusiveMaximum === true) out.exclusiveMaximum = value
    else out[keyword] = value
    return true
  }
  if (COUNT_KEYWORDS.has(keyword)) {
    if (typeof value === "number" && Number.isInteger(value) && value >= 0) out[keyword] = value
    else invalid("a non-negative integer")
    return true
  }
  if (BOOLEAN_KEYWORDS.has(keyword)) {
    if (typeof value === "boolean") out[keyword] = value
    else invalid("a boolean")
    return true
  }
  if (STRING_KEYWORDS.has(keyword)) {
    if (typeof value === "string") out[keyword] = value
    else invalid("a string")
    return true
  }
  if (VALUE_KEYWORDS.has(keyword)) {
    if (value !== undefined) out[keyword] = value
    return true
  }
  switch (keyword) {
    case "type":
      normalizeType(value, out, warn)
      return true
    case "enum":
      if (Array.isArray(value)) out.enum = value
      else invalid("an array")
      return true
    case "examples":
      // OAS 3.0 `examples` of a media type is a map; only JSON Schema's array form is a schema keyword
      if (Array.isArray(value)) out.examples = value
      return true
    case "pattern":
      if (typeof value === "string" && isValidRegExp(value)) out.pattern = value
      else warn(keyword, `invalid pattern ${JSON.stringify(value)} ignored (not an ECMAScript regular expression)`)
      return true
    case "required":
      if (Array.isArray(value)) {
        const names = [...new Set(value.filter((name): name is string => typeof name === "string"))]
        if (names.length > 0) out.required = names
      } else {
        invalid("an array of property names")
      }
      return true
    case "dependentRequired":
      if (typeof value === "object" && value !== null && !Array.isArray(value)) {
        const entries = Object.entries(value).filter(([, names]) => Array.isArray(names))
        if (entries.length > 0) out.dependentRequired = Object.fromEntries(entries)
      }
      return true
    default:
      return false
  }
}

/** Adds "null" to a schema that OAS 3.0 (`nullable`) or Swagger (`x-nullable`) marks nullable. */
export const applyNullable = (out: JsonObject): JsonObject => {
  if (out.type !== undefined) {
    const types = Array.isArray(out.type) ? out.type : [out.type]
    if (!types.includes("null")) out.type = [...types, "null"]
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null]
    return out
  }
  if (Array.isArray(out.enum)) {
    if (!out.enum.includes(null)) out.enum = [...out.enum, null]
    return out
  }
  if (out.allOf !== undefined || out.anyOf !== undefined || out.oneOf !== undefined || out.$ref !== undefined) {
    // `nullable` next to a composition (the usual way to make a $ref nullable in 3.0)
    const { description, title, ...rest } = out
    return {
      ...(title !== undefined ? { title } : {}),
      ...(description !== undefined ? { description } : {}),
      anyOf: [rest, { type: "null" }]
    }
  }
  return out
}
