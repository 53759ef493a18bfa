import { isObject, type JsonObject, type Schema } from "./ImportContext.js"

/** Converted schemas refer to shared components as `{ $ref: "#/$defs/<name>" }`. */
export const DEFS_PREFIX = "#/$defs/"

// Subschema keywords of the converted output, by shape. Descending ones apply to a part of the value
// (a property, an item); the others apply to the value itself, so a cycle through only those never ends.
const SINGLE = new Set([
  "not",
  "if",
  "then",
  "else",
  "contains",
  "propertyNames",
  "additionalProperties",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contentSchema",
  "items"
])
const LIST = new Set(["allOf", "anyOf", "oneOf", "prefixItems"])
const MAP = new Set(["properties", "patternProperties", "dependentSchemas"])
const SAME_VALUE = new Set(["not", "if", "then", "else", "allOf", "anyOf", "oneOf", "dependentSchemas"])

export const refName = (node: JsonObject): string | undefined =>
  typeof node.$ref === "string" && node.$ref.startsWith(DEFS_PREFIX) ? node.$ref.slice(DEFS_PREFIX.length) : undefined

type OnRef = (name: string, node: JsonObject, descends: boolean) => Schema

/**
 * Copies `schema`, replacing each component reference by what `onRef` returns. Only subschema keywords
 * are walked: a `$ref` inside `default`, `enum` or `examples` is data.
 */
export const replaceRefs = (schema: Schema, onRef: OnRef, descends = false): Schema => {
  if (typeof schema === "boolean") return schema
  const name = refName(schema)
  if (name !== undefined) return onRef(name, schema, descends)
  const out: JsonObject = {}
  for (const [keyword, value] of Object.entries(schema)) {
    const deeper = descends || !SAME_VALUE.has(keyword)
    const sub = (item: unknown) => isObject(item) || typeof item === "boolean" ? replaceRefs(item, onRef, deeper) : item
    if (SINGLE.has(keyword)) out[keyword] = sub(value)
    else if (LIST.has(keyword) && Array.isArray(value)) out[keyword] = value.map(sub)
    else if (MAP.has(keyword) && isObject(value)) {
      out[keyword] = Object.fromEntries(Object.entries(value).map(([key, item]) => [key, sub(item)]))
    } else out[keyword] = value
  }
  return out
}

/** The component references in `schema`, each with whether it sits below a property or item. */
export const refsIn = (schema: Schema): Array<{ readonly name: string; readonly descends: boolean }> => {
  const refs: Array<{ name: string; descends: boolean }> = []
  replaceRefs(schema, (name, node, descends) => {
    refs.push({ name, descends })
    return node
  })
  return refs
}

/**
 * Strongly connected components (Tarjan, iterative so that long chains cannot exhaust the stack),
 * in reverse topological order: a component comes after every component it reaches.
 */
export const stronglyConnected = <N>(
  nodes: Iterable<N>,
  edges: (node: N) => ReadonlyArray<N>
): Array<Array<N>> => {
  const index = new Map<N, number>()
  const low = new Map<N, number>()
  const stack: Array<N> = []
  const onStack = new Set<N>()
  const result: Array<Array<N>> = []
  for (const root of nodes) {
    if (index.has(root)) continue
    const work: Array<{ node: N; next: number; targets: ReadonlyArray<N> }> = []
    const open = (node: N) => {
      index.set(node, index.size)
      low.set(node, index.get(node)!)
      stack.push(node)
      onStack.add(node)
      work.push({ node, next: 0, targets: edges(node) })
    }
    open(root)
    while (work.length > 0) {
      const frame = work[work.length - 1]!
      if (frame.next < frame.targets.length) {
        const target = frame.targets[frame.next++]!
        if (!index.has(target)) open(target)
        else if (onStack.has(target)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(target)!))
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!))
      if (low.get(frame.node) === index.get(frame.node)) {
        const members: Array<N> = []
        let member: N
        do {
          member = stack.pop()!
          onStack.delete(member)
          members.push(member)
        } while (member !== frame.node)
        result.push(members)
      }
    }
  }
  return result
}

/** The edges that close a cycle in a depth-first walk; without them the graph has no cycle. */
export const backEdges = <N>(
  nodes: Iterable<N>,
  edges: (node: N) => ReadonlyArray<N>
): Array<readonly [N, N]> => {
  const state = new Map<N, "open" | "done">()
  const found: Array<readonly [N, N]> = []
  for (const root of nodes) {
    if (state.has(root)) continue
    state.set(root, "open")
    const work = [{ node: root, next: 0, targets: edges(root) }]
    while (work.length > 0) {
      const frame = work[work.length - 1]!
      if (frame.next < frame.targets.length) {
        const target = frame.targets[frame.next++]!
        const seen = state.get(target)
        if (seen === "open") found.push([frame.node, target])
        if (seen === undefined) {
          state.set(target, "open")
          work.push({ node: target, next: 0, targets: edges(target) })
        }
        continue
      }
      state.set(frame.node, "done")
      work.pop()
    }
  }
  return found
}

/** Whether `schema` serializes to more objects and arrays, or nests them deeper, than `limit`. */
export const exceeds = (schema: unknown, limit: { readonly nodes: number; readonly depth: number }): boolean => {
  let count = 0
  const visit = (value: unknown, depth: number): boolean => {
    if (typeof value !== "object" || value === null) return false
    if (++count > limit.nodes || depth > limit.depth) return true
    return (Array.isArray(value) ? value : Object.values(value)).some((item) => visit(item, depth + 1))
  }
  return visit(schema, 0)
}
