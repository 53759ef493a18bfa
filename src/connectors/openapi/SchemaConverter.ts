import { type Bundle, bundle, costOf, type DefsSource } from "./DefsBundle.js"
import { type ImportContext, isObject, type JsonObject, pointer, type Schema } from "./ImportContext.js"
import { backEdges, DEFS_PREFIX, exceeds, refsIn, replaceRefs, stronglyConnected } from "./SchemaGraph.js"
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
/** Inline nesting within one schema; deeper is cut (it would exhaust the stack). */
const MAX_DEPTH = 64
/**
 * Components larger (schema nodes) or deeper (levels) than this stay in `$defs` instead of being inlined
 * at every use: inlining big schemas grows the serialized form without bound, deep ones exhaust the stack
 * of Ajv's compiler.
 */
const INLINE_LIMIT = { nodes: 200, depth: 24 }

type Resource = { readonly pointer: string; readonly value: unknown }

interface Component {
  readonly name: string
  readonly pointer: string
  readonly value: unknown
  readonly resource: Resource
  body: Schema
  /** After `seal`: the body with inlinable components substituted, and whether it may itself be inlined. */
  sealed?: {
    readonly schema: Schema
    readonly inline: boolean
    readonly refs: ReadonlyArray<string>
    readonly cost: number
    readonly bound: number
  }
}

/**
 * Converts OAS 3.0 / 3.1 / Swagger 2.0 schemas into JSON Schema 2020-12, in two phases.
 *
 * `convert` turns every local `$ref` into a reference to a component converted once for the whole
 * document (a work list, not recursion, so long chains of refs cannot exhaust the stack). `seal` then
 * breaks cycles that never descend into a property or item (they would loop forever in a validator),
 * and inlines the components that are neither recursive nor large, which keeps schemas readable for
 * people and models. `finish` and `bundle` give the final schemas; the caller places the `$defs` at the
 * root of the schema it assembles.
 */
export class SchemaConverter {
  private readonly byPointer = new Map<string, Component>()
  private readonly byName = new Map<string, Component>()
  private readonly pending: Array<Component> = []
  private readonly onPath = new Set<object>()
  private isSealed = false
  private readonly defsSource: DefsSource = {
    schema: (name) => this.byName.get(name)?.sealed?.schema,
    refs: (name) => this.byName.get(name)?.sealed?.refs ?? [],
    cost: (name) => this.byName.get(name)?.sealed?.cost ?? 0,
    bound: (name) => this.byName.get(name)?.sealed?.bound ?? 0
  }

  constructor(private readonly ctx: ImportContext) {}

  /** Phase 1: converts the schema found at `at` (a JSON pointer used for warnings). */
  convert(schema: unknown, at: string): Schema {
    if (this.isSealed) throw new Error("SchemaConverter.convert after seal")
    const converted = this.walk(schema, at, { pointer: at, value: schema }, 0)
    for (let component = this.pending.pop(); component !== undefined; component = this.pending.pop()) {
      component.body = this.walk(component.value, component.pointer, component.resource, 0)
    }
    return converted
  }

  /** Phase 2: settles which components are inlined. */
  seal(): void {
    this.isSealed = true
    const components = [...this.byName.values()]
    const targets = (component: Component, descending: boolean) =>
      refsIn(component.body).filter((ref) => descending || !ref.descends).map((ref) => this.byName.get(ref.name)!)
    // a cycle that never enters a property or item would make a validator loop forever: cut it once
    for (const [from, to] of backEdges(components, (c) => targets(c, false))) {
      this.ctx.warn(
        from.pointer,
        `circular $ref to ${to.pointer} that never descends into a property or item; replaced by {}`
      )
      from.body = replaceRefs(from.body, (name, node, descends) => !descends && name === to.name ? {} : node)
    }
    // in reverse topological order, so every component a member refers to outside its cycle is sealed
    for (const members of stronglyConnected(components, (c) => targets(c, true))) {
      const recursive = members.length > 1 || targets(members[0]!, true).includes(members[0]!)
      const sealed = members.map((member) => {
        const schema = this.inline(member.body)
        const refs = [...new Set(refsIn(schema).map((ref) => ref.name))]
        return { member, schema, refs, cost: costOf(schema), inline: !recursive && !exceeds(schema, INLINE_LIMIT) }
      })
      const inside = new Set(members.map((member) => member.name))
      const beyond = sealed.reduce(
        (max, { refs }) =>
          refs.reduce((m, name) => inside.has(name) ? m : Math.max(m, this.byName.get(name)!.sealed!.bound), max),
        0
      )
      // a chain visits each member of a cycle at most once
      const bound = sealed.reduce((sum, { cost }) => sum + cost, 0) + beyond
      for (const { member, ...rest } of sealed) member.sealed = { ...rest, bound }
    }
  }

  /** A converted schema in its final form (after `seal`). */
  finish(schema: Schema): Schema {
    return this.inline(schema)
  }

  /**
   * Finished `schemas` with the `$defs` they need, for a schema assembled around them `rootDepth` levels
   * deep; references are cut (with a warning at `at`) where a validator could not compile the chain.
   */
  bundle(schemas: ReadonlyArray<Schema>, rootDepth: number, at: string): Bundle {
    const result = bundle(this.defsSource, schemas, rootDepth)
    if (result.cut) {
      this.ctx.warn(at, "schemas recurse too deeply for a validator; deep and circular references were replaced by {}")
    }
    return result
  }

  private inline(schema: Schema): Schema {
    return replaceRefs(schema, (name, node) => {
      const sealed = this.byName.get(name)?.sealed
      if (sealed === undefined || !sealed.inline) return node
      const { $ref: _, ...annotations } = node
      if (Object.keys(annotations).length === 0) return sealed.schema
      if (sealed.schema === true) return annotations
      return sealed.schema === false ? { ...annotations, not: {} } : { ...sealed.schema, ...annotations }
    })
  }

  private component(at: string, value: unknown, resource: Resource): Component {
    const existing = this.byPointer.get(at)
    if (existing !== undefined) return existing
    const last = at.slice(at.lastIndexOf("/") + 1).replace(/~1/g, "/").replace(/~0/g, "~")
    const base = last.replace(/[^A-Za-z0-9_.-]+/g, "_") || "schema"
    let name = base
    for (let n = 2; this.byName.has(name); n++) name = `${base}_${n}`
    const component: Component = { name, pointer: at, value, resource: resourceFor(this.ctx, at, resource), body: {} }
    this.byPointer.set(at, component)
    this.byName.set(name, component)
    this.pending.push(component)
    return component
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
    let target: JsonObject = {}
    if (located.found) target = { $ref: DEFS_PREFIX + this.component(located.pointer, located.value, resource).name }
    else this.ctx.warn(pointer(at, "$ref"), `unresolved $ref "${ref}": ${located.reason}; replaced by {}`)

    const siblings = Object.entries(schema).filter(([key]) =>
      key !== "$ref" && (this.ctx.version === "3.1" || ANNOTATIONS.has(key))
    )
    if (siblings.length === 0) return target
    const extra = this.keywords(Object.fromEntries(siblings), at, resource, depth)
    if (typeof extra === "boolean") return target
    if (Object.keys(extra).every((key) => ANNOTATIONS.has(key))) return { ...target, ...extra }
    const allOf = Array.isArray(extra.allOf) ? extra.allOf : []
    return { ...extra, allOf: [target, ...allOf] }
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
