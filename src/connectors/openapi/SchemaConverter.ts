import { type ImportContext, isObject, type JsonObject, pointer, type Schema } from "./ImportContext.js"
import { applyNullable, copyScalarKeyword, isValidRegExp } from "./SchemaKeywords.js"

const SUBSCHEMA = [
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contentSchema"
]
const SUBSCHEMA_LIST = ["allOf", "anyOf", "oneOf", "prefixItems"]
const SUBSCHEMA_MAP = ["properties", "patternProperties", "dependentSchemas"]
/** Keywords that may sit next to a `$ref` in OAS 3.0 / Swagger, where other siblings are ignored. */
const ANNOTATIONS = new Set(["title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"])
/** Inline nesting within one schema, and nesting of refs inside refs; deeper is cut (it would exhaust the stack). */
const MAX_DEPTH = 64
const MAX_REF_CHAIN = 200
/** Converted components larger than this many schema nodes go to `$defs` instead of being inlined at every use. */
const INLINE_LIMIT = 200
const DEFS_PREFIX = "#/$defs/"

/**
 * Converts OAS 3.0 / 3.1 / Swagger 2.0 schemas into self-contained JSON Schema 2020-12.
 *
 * Local `$ref`s are inlined, which keeps the schemas readable for people and models; a reference that
 * recurses into itself, or whose schema is large (inlining large schemas used in many places grows the
 * serialized form without bound), is kept as `$ref: "#/$defs/Name"` instead, and the caller places the
 * `$defs` (see `defsFor`) at the root of the schema it assembles. One converter serves a whole document, so a
 * component is converted (and warned about) once.
 */
export class SchemaConverter {
  private readonly defs = new Map<string, Schema>()
  private readonly names = new Map<string, string>()
  private readonly memo = new Map<string, Schema>()
  private readonly expanding: Array<string> = []
  private readonly recursive = new Set<string>()
  private readonly onPath = new Set<object>()

  constructor(private readonly ctx: ImportContext) {}

  /** Converts the schema found at `at` (a JSON pointer used for warnings). */
  convert(schema: unknown, at: string): Schema {
    return this.walk(schema, at, { pointer: at, value: schema }, 0)
  }

  /** The `$defs` that `schemas` reference, transitively. */
  defsFor(schemas: ReadonlyArray<unknown>): Record<string, Schema> {
    const needed: Record<string, Schema> = {}
    const visited = new Set<object>()
    const scan = (value: unknown): void => {
      if (typeof value !== "object" || value === null || visited.has(value)) return
      visited.add(value)
      if (Array.isArray(value)) return value.forEach(scan)
      const ref = (value as JsonObject).$ref
      if (typeof ref === "string" && ref.startsWith(DEFS_PREFIX)) {
        const name = ref.slice(DEFS_PREFIX.length)
        const def = this.defs.get(name)
        if (def !== undefined && !(name in needed)) {
          needed[name] = def
          scan(def)
        }
      }
      Object.values(value).forEach(scan)
    }
    schemas.forEach(scan)
    return needed
  }

  private walk(schema: unknown, at: string, resource: Resource, depth: number): Schema {
    if (typeof schema === "boolean") return schema
    if (!isObject(schema)) {
      this.ctx.warn(at, "schema is not an object; replaced by {}")
      return {}
    }
    if (depth > MAX_DEPTH) {
      this.ctx.warn(at, `schema nested deeper than ${MAX_DEPTH} levels; replaced by {}`)
      return {}
    }
    if (this.onPath.has(schema)) {
      this.ctx.warn(at, "schema contains itself (circular object); replaced by {}")
      return {}
    }
    this.onPath.add(schema)
    try {
      return typeof schema.$ref === "string"
        ? this.reference(schema, at, resource, depth)
        : this.keywords(schema, at, resource, depth)
    } finally {
      this.onPath.delete(schema)
    }
  }

  private reference(schema: JsonObject, at: string, resource: Resource, depth: number): Schema {
    const ref = schema.$ref as string
    const located = this.ctx.locate(ref, resource)
    let target: Schema = {}
    if (located.found) target = this.target(located.pointer, located.value, resource)
    else this.ctx.warn(pointer(at, "$ref"), `unresolved $ref "${ref}": ${located.reason}; replaced by {}`)

    const siblings = Object.entries(schema).filter(([key]) =>
      key !== "$ref" && (this.ctx.version === "3.1" || ANNOTATIONS.has(key))
    )
    if (siblings.length === 0) return target
    const extra = this.keywords(Object.fromEntries(siblings), at, resource, depth)
    if (typeof extra === "boolean") return target
    const onlyAnnotations = Object.keys(extra).every((key) => ANNOTATIONS.has(key))
    if (target === true) return extra
    if (onlyAnnotations) return target === false ? { ...extra, not: {} } : { ...target, ...extra }
    const allOf = Array.isArray(extra.allOf) ? extra.allOf : []
    return { ...extra, allOf: [target, ...allOf] }
  }

  private target(at: string, value: unknown, resource: Resource): Schema {
    const memo = this.memo.get(at)
    if (memo !== undefined) return memo
    if (this.expanding.includes(at)) {
      this.recursive.add(at)
      return { $ref: DEFS_PREFIX + this.nameFor(at) }
    }
    if (this.expanding.length >= MAX_REF_CHAIN) {
      this.ctx.warn(at, `$refs nested more than ${MAX_REF_CHAIN} deep; replaced by {}`)
      return {}
    }
    this.expanding.push(at)
    // a component is converted on its own, so its result does not depend on where it was first used
    const converted = this.walk(value, at, resourceFor(this.ctx, at, resource), 0)
    this.expanding.pop()
    if (!this.recursive.has(at) && !exceeds(converted, INLINE_LIMIT)) {
      this.memo.set(at, converted)
      return converted
    }
    const name = this.nameFor(at)
    const ref = { $ref: DEFS_PREFIX + name }
    const selfOnly = isObject(converted) && Object.keys(converted).length === 1 && converted.$ref === ref.$ref
    if (selfOnly) this.ctx.warn(at, "circular $ref with no schema in between; replaced by {}")
    this.defs.set(name, selfOnly ? {} : converted)
    this.memo.set(at, ref)
    return ref
  }

  private nameFor(at: string): string {
    const existing = this.names.get(at)
    if (existing !== undefined) return existing
    const last = at.slice(at.lastIndexOf("/") + 1).replace(/~1/g, "/").replace(/~0/g, "~")
    const base = last.replace(/[^A-Za-z0-9_.-]+/g, "_") || "schema"
    const taken = new Set(this.names.values())
    let name = base
    for (let n = 2; taken.has(name); n++) name = `${base}_${n}`
    this.names.set(at, name)
    return name
  }

  private keywords(schema: JsonObject, at: string, resource: Resource, depth: number): Schema {
    const out: JsonObject = {}
    const warn = (keyword: string, message: string) => this.ctx.warn(pointer(at, keyword), message)
    const sub = (value: unknown, ...segments: ReadonlyArray<string | number>) =>
      this.walk(value, pointer(at, ...segments), resource, depth + 1)
    for (const [keyword, value] of Object.entries(schema)) {
      if (copyScalarKeyword(keyword, schema, out, warn)) continue
      if (SUBSCHEMA.includes(keyword)) {
        out[keyword] = sub(value, keyword)
      } else if (SUBSCHEMA_LIST.includes(keyword)) {
        if (Array.isArray(value) && value.length > 0) out[keyword] = value.map((item, i) => sub(item, keyword, i))
        else warn(keyword, `invalid ${keyword} (expected a non-empty array) ignored`)
      } else if (SUBSCHEMA_MAP.includes(keyword)) {
        if (!isObject(value)) {
          warn(keyword, `invalid ${keyword} (expected an object) ignored`)
          continue
        }
        const entries = Object.entries(value).filter(([name]) => {
          if (keyword !== "patternProperties" || isValidRegExp(name)) return true
          warn(keyword, `invalid pattern ${JSON.stringify(name)} in patternProperties ignored`)
          return false
        })
        out[keyword] = Object.fromEntries(entries.map(([name, item]) => [name, sub(item, keyword, name)]))
      } else if (keyword === "items") {
        if (!Array.isArray(value)) out.items = sub(value, "items")
        else if (value.length > 0) {
          // draft-04 tuple form
          out.prefixItems = value.map((item, i) => sub(item, "items", i))
          if (schema.additionalItems !== undefined) out.items = sub(schema.additionalItems, "additionalItems")
        }
      } else if (keyword === "dependencies" && isObject(value)) {
        for (const [name, dependency] of Object.entries(value)) {
          const group = Array.isArray(dependency) ? "dependentRequired" : "dependentSchemas"
          const converted = Array.isArray(dependency) ? dependency : sub(dependency, "dependencies", name)
          out[group] = { ...(out[group] as JsonObject | undefined), [name]: converted }
        }
      }
      // everything else (nullable, discriminator, xml, externalDocs, example, $id, $defs, x-*) is dropped
    }
    dropReadOnlyFromRequired(out)
    return schema.nullable === true || schema["x-nullable"] === true ? applyNullable(out) : out
  }
}

type Resource = { readonly pointer: string; readonly value: unknown }

/** Whether `schema` serializes to more than `limit` objects and arrays. */
const exceeds = (schema: Schema, limit: number): boolean => {
  let count = 0
  const visit = (value: unknown): boolean => {
    if (typeof value !== "object" || value === null) return false
    if (++count > limit) return true
    return (Array.isArray(value) ? value : Object.values(value)).some(visit)
  }
  return visit(schema)
}

/** The schema resource a component lives in, against which its relative `#/$defs/...` refs resolve. */
const resourceFor = (ctx: ImportContext, at: string, current: Resource): Resource => {
  const match = /^\/components\/schemas\/[^/]+|^\/definitions\/[^/]+/.exec(at)
  if (match === null) return current
  const located = ctx.locate("#" + match[0])
  return located.found ? { pointer: located.pointer, value: located.value } : current
}

/** Request bodies never have to carry server-assigned (readOnly) properties. */
const dropReadOnlyFromRequired = (out: JsonObject) => {
  if (!Array.isArray(out.required) || !isObject(out.properties)) return
  const properties = out.properties
  const required = out.required.filter((name) => {
    const property = properties[name]
    return !(isObject(property) && property.readOnly === true)
  })
  if (required.length > 0) out.required = required
  else delete out.required
}
