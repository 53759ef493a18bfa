import type { Schema } from "./ImportContext.js"
import { refsIn, replaceRefs } from "./SchemaGraph.js"

/** What a bundle needs to know about the sealed components. */
export interface DefsSource {
  readonly schema: (name: string) => Schema | undefined
  readonly refs: (name: string) => ReadonlyArray<string>
  /** Nesting levels a validator compiler descends through for this component. */
  readonly cost: (name: string) => number
  /** An upper bound of `cost` summed along any chain of references that starts at this component. */
  readonly bound: (name: string) => number
}

export interface Bundle {
  readonly roots: Array<Schema>
  readonly defs: Record<string, Schema>
  /** Whether references had to be cut to keep the bundle within the compile budget. */
  readonly cut: boolean
}

/**
 * Ajv compiles `$ref`s depth-first and recursively: a long enough chain of (mutually) recursive
 * definitions exhausts the stack. Chains whose bounded cost stays under this budget compile (measured
 * failures start above twice this value).
 */
const COMPILE_BUDGET = 600
/** A cut bundle keeps at most this many definitions (the nearest ones), which bounds its size. */
const MAX_CUT_DEFS = 100

const depthOf = (value: unknown): number => {
  if (typeof value !== "object" || value === null) return 0
  return 1 + maxOf((Array.isArray(value) ? value : Object.values(value)).map(depthOf))
}

// not Math.max(...values): spreading a long array overflows the argument limit
const maxOf = (values: ReadonlyArray<number>) => values.reduce((max, value) => Math.max(max, value), 0)

const sorted = (entries: Iterable<readonly [string, Schema]>) =>
  Object.fromEntries([...entries].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0))

/**
 * The `$defs` that `roots` need, transitively. When their chains could exceed the compile budget,
 * definitions are ranked breadth-first from the roots and a reference is kept only from one rank to
 * the next (and only as deep as the budget allows); every other reference becomes `{}`.
 */
export const bundle = (source: DefsSource, roots: ReadonlyArray<Schema>, rootDepth: number): Bundle => {
  const first = [...new Set(roots.flatMap((root) => refsIn(root).map((ref) => ref.name)))]
    .filter((name) => source.schema(name) !== undefined)
  const base = rootDepth + maxOf(roots.map(depthOf))
  if (base + maxOf(first.map(source.bound)) <= COMPILE_BUDGET) {
    const names = new Set<string>()
    const queue = [...first]
    for (let name = queue.pop(); name !== undefined; name = queue.pop()) {
      if (names.has(name) || source.schema(name) === undefined) continue
      names.add(name)
      queue.push(...source.refs(name))
    }
    return { roots: [...roots], defs: sorted([...names].map((name) => [name, source.schema(name)!])), cut: false }
  }
  const rank = new Map<string, number>()
  let spent = base
  for (let level = 1, frontier = first; frontier.length > 0 && rank.size < MAX_CUT_DEFS; level++) {
    spent += maxOf(frontier.map(source.cost))
    if (spent > COMPILE_BUDGET) break
    for (const name of frontier.slice(0, MAX_CUT_DEFS - rank.size)) rank.set(name, level)
    frontier = [...new Set(frontier.flatMap(source.refs))]
      .filter((name) => !rank.has(name) && source.schema(name) !== undefined)
  }
  const keepFrom = (level: number) => (schema: Schema) =>
    replaceRefs(schema, (name, node) => rank.get(name) === level + 1 ? node : {})
  return {
    roots: roots.map(keepFrom(0)),
    defs: sorted([...rank].map(([name, level]) => [name, keepFrom(level)(source.schema(name)!)])),
    cut: true
  }
}

export const costOf = (schema: Schema): number => depthOf(schema) + 2
