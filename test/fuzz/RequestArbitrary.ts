import { Arbitrary, FastCheck as fc, Schema } from "effect"
import type { FuzzWorld, Organization } from "./FuzzWorld.js"
import {
  changeOneString,
  type ContentType,
  contentType,
  deepJson,
  hostileId,
  invalidJson,
  nonObjectJson,
  oddQueryValue,
  withIds
} from "./Hostile.js"
import { isInvoke, type Operation } from "./Operations.js"

/** Where a path value came from: the caller's organization, the other one, the id format, or nowhere good. */
export type Source = "own" | "other" | "format" | "hostile" | "name"

export interface PathValue {
  readonly name: string
  readonly value: string
  readonly source: Source
}

export type BodyKind = "none" | "valid" | "nul" | "huge" | "non_object" | "invalid_json" | "deep" | "random_json"

/** One generated request, before it is sent as each role: plain data, so a counterexample prints as it is. */
export interface FuzzRequest {
  readonly operation: string
  /** The callers' organization. */
  readonly org: "A" | "B"
  readonly path: ReadonlyArray<PathValue>
  readonly query: ReadonlyArray<readonly [string, string]>
  /** Query parameters given a value no valid request has. */
  readonly oddQuery: ReadonlyArray<string>
  readonly contentType: ContentType
  readonly body: { readonly kind: BodyKind; readonly text: string | undefined; readonly otherIds: boolean }
  readonly headers: Readonly<Record<string, string>>
}

/** The contract's arbitrary for `schema`, encoded to its wire form; undefined when Effect cannot derive one. */
export const wireArbitrary = (schema: Schema.Schema<any, any> | undefined): fc.Arbitrary<unknown> | undefined => {
  if (schema === undefined) return undefined
  try {
    const encode = Schema.encodeUnknownOption(schema)
    return Arbitrary.make(schema).map((value) => {
      const encoded = encode(value)
      return encoded._tag === "Some" ? encoded.value : undefined
    })
  } catch {
    return undefined
  }
}

const NAMES: Record<string, (w: FuzzWorld) => ReadonlyArray<string>> = {
  operation_id: (w) => Object.keys(w.operations)
}

/** A path parameter's values: only good ones of the caller's organization, or any (theirs, unknown, junk). */
const pathValue = (
  op: Operation,
  name: string,
  last: boolean,
  own: Organization,
  other: Organization,
  world: FuzzWorld
): { readonly good: fc.Arbitrary<PathValue> | undefined; readonly any: fc.Arbitrary<PathValue> } => {
  const tagged = (source: Source) => (value: string) => ({ name, value, source })
  const hostile = { weight: 3, arbitrary: hostileId.map(tagged("hostile")) }
  const formatted = wireArbitrary(op.pathSchema)?.map((v: any) => String(v?.[name] ?? ""))
  const names = NAMES[name]?.(world)
  if (names !== undefined || own.ids[name] === undefined) {
    // not an object of an organization (an operation name, a provider): its valid values, or junk
    const valid = (names !== undefined ? fc.constantFrom(...names) : formatted)?.map(tagged("name"))
    return {
      good: valid,
      any: valid === undefined
        ? hostile.arbitrary
        : fc.oneof({ withCrossShrink: true }, { weight: 5, arbitrary: valid }, hostile)
    }
  }
  const format = formatted?.map(tagged("format"))
  const pool = own.ids[name]!
  const mine = op.destructive && last ? pool.spend : pool.use.length > 0 ? pool.use : pool.spend
  const theirs = [...(other.ids[name]?.use ?? []), ...(other.ids[name]?.spend ?? [])]
  const good = mine.length > 0 ? fc.constantFrom(...mine).map(tagged("own")) : undefined
  const choices: Array<fc.WeightedArbitrary<PathValue>> = []
  if (good !== undefined) choices.push({ weight: 6, arbitrary: good })
  if (theirs.length > 0) choices.push({ weight: 2, arbitrary: fc.constantFrom(...theirs).map(tagged("other")) })
  if (format !== undefined) choices.push({ weight: 1, arbitrary: format })
  choices.push(hostile)
  return { good, any: fc.oneof({ withCrossShrink: true }, ...choices) }
}

/** The path: every value good (to reach the handlers' depths), or each drawn from everything. */
const pathArbitrary = (op: Operation, own: Organization, other: Organization, world: FuzzWorld) => {
  const values = op.pathParams.map((name, i) => pathValue(op, name, i === op.pathParams.length - 1, own, other, world))
  const any = fc.tuple(...values.map((v) => v.any)) as fc.Arbitrary<Array<PathValue>>
  if (values.length === 0 || values.some((v) => v.good === undefined)) return any
  const good = fc.tuple(...values.map((v) => v.good!)) as fc.Arbitrary<Array<PathValue>>
  return fc.oneof({ withCrossShrink: true }, { weight: 1, arbitrary: good }, { weight: 1, arbitrary: any })
}

const queryArbitrary = (op: Operation, own: Organization, other: Organization) => {
  if (op.queryParams.length === 0) return fc.constant({ query: [] as Array<[string, string]>, oddQuery: [] })
  const valid = (wireArbitrary(op.urlParams) ?? fc.constant({})).map((v) =>
    Object.entries((v ?? {}) as Record<string, unknown>).filter(([, x]) => x !== undefined).map((
      [k, x]
    ) => [k, String(x)] as [string, string])
  )
  const idValue = (name: string) => {
    const ids = [...(own.ids[name]?.use ?? []), ...(other.ids[name]?.use ?? [])]
    return ids.length === 0 ? oddQueryValue : fc.oneof(oddQueryValue, fc.constantFrom(...ids))
  }
  const odd = fc.array(
    fc.constantFrom(...op.queryParams).chain((name) => idValue(name).map((v) => [name, v] as [string, string])),
    { maxLength: 3 }
  )
  return fc.record({ valid: fc.option(valid, { freq: 2, nil: [] }), odd }).map(({ odd, valid }) => ({
    query: [...valid.filter(([k]) => !odd.some(([o]) => o === k)), ...odd],
    oddQuery: Array.from(new Set(odd.map(([k]) => k)))
  }))
}

type Body = FuzzRequest["body"]
const text = (kind: BodyKind, t: string | undefined, otherIds = false): Body => ({ kind, text: t, otherIds })

/** Values a connector path parameter must not be able to climb out of its base path with. */
const climbing = fc.oneof(
  { weight: 4, arbitrary: fc.constant("..") },
  { weight: 1, arbitrary: fc.constant(".") },
  { weight: 2, arbitrary: fc.constantFrom("../..", "%2e%2e", ".%2E", "..%2f..", "a/../..", "..\\..") },
  { weight: 1, arbitrary: hostileId }
)

/** An invoke body for one of the connector's own operations: what it takes, its path values valid or climbing. */
const invokeBody = (world: FuzzWorld, operationId: string | undefined) => {
  const takes = operationId === undefined ? undefined : world.operations[operationId]
  if (takes === undefined) return undefined
  const value = fc.oneof({ weight: 1, arbitrary: fc.constantFrom("1", "report.txt") }, {
    weight: 3,
    arbitrary: climbing
  })
  const limit = fc.oneof(fc.integer({ min: 1, max: 100 }), hostileId)
  return fc.record({
    ...(takes.path.length === 0
      ? {}
      : { path_params: fc.record(Object.fromEntries(takes.path.map((p) => [p, value]))) }),
    ...(takes.query.length === 0 ? {} : { query_params: fc.record({ limit }, { requiredKeys: [] }) }),
    ...(takes.body ? { body_params: fc.record({ name: fc.string({ minLength: 1 }) }) } : {})
  }).map((b) => text("valid", JSON.stringify(b)))
}

const bodyArbitrary = (
  op: Operation,
  own: Organization,
  other: Organization,
  invoke: fc.Arbitrary<Body> | undefined
): fc.Arbitrary<Body> => {
  const none = fc.constant(text("none", undefined))
  const randomJson = fc.jsonValue({ maxDepth: 3 }).map((v) => text("random_json", JSON.stringify(v)))
  const nonObject = nonObjectJson.map((t) => text("non_object", t))
  if (!op.takesBody) {
    return fc.oneof({ withCrossShrink: true }, { weight: 8, arbitrary: none }, { weight: 1, arbitrary: randomJson }, {
      weight: 1,
      arbitrary: nonObject
    })
  }
  const valid = wireArbitrary(op.payload) ?? fc.jsonValue({ maxDepth: 3 })
  const ids = (org: Organization) => (field: string) => {
    const pool = org.ids[field]
    return pool === undefined ? [] : [...pool.use, ...pool.spend]
  }
  const pick = fc.nat({ max: 1000 })
  return fc.oneof(
    { withCrossShrink: true },
    ...(invoke === undefined ? [] : [{ weight: 10, arbitrary: invoke }]),
    {
      weight: 6,
      arbitrary: fc.record({ v: valid, mode: fc.constantFrom("keep", "own", "other"), pick }).map(
        ({ mode, pick, v }) => {
          if (mode === "keep") return text("valid", JSON.stringify(v ?? {}))
          const swapped = withIds(v, ids(mode === "own" ? own : other), pick)
          return text("valid", JSON.stringify(swapped.value ?? {}), mode === "other" && swapped.replaced)
        }
      )
    },
    {
      weight: 2,
      arbitrary: fc.record({ v: valid, pick, at: fc.constantFrom("end", "only", "middle") }).map(({ at, pick, v }) =>
        text(
          "nul",
          JSON.stringify(
            changeOneString(
              v ?? {},
              pick,
              (s) => at === "only" ? "\u0000" : at === "end" ? `${s}\u0000` : `${s.slice(0, 1)}\u0000${s.slice(1)}`
            )
          )
        )
      )
    },
    {
      weight: 1,
      arbitrary: fc.record({ v: valid, pick, size: fc.constantFrom(10_000, 300_000, 2_000_000) }).map((
        { pick, size, v }
      ) => text("huge", JSON.stringify(changeOneString(v ?? {}, pick, () => "x".repeat(size)))))
    },
    { weight: 2, arbitrary: nonObject },
    { weight: 1, arbitrary: invalidJson.map((t) => text("invalid_json", t)) },
    { weight: 1, arbitrary: deepJson.map((t) => text("deep", t)) },
    { weight: 1, arbitrary: randomJson },
    { weight: 1, arbitrary: none }
  )
}

const headerArbitrary = (op: Operation) =>
  op.headerParams.length === 0
    ? fc.constant({})
    : fc.record(
      Object.fromEntries(
        op.headerParams.map((h) => [h, fc.oneof(fc.uuid(), fc.string({ minLength: 1, maxLength: 300 }))])
      ),
      { requiredKeys: [] }
    ).map((h) =>
      Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined && v.trim() !== "")) as Record<
        string,
        string
      >
    )

const forOperation = (op: Operation, own: Organization, other: Organization, world: FuzzWorld) =>
  pathArbitrary(op, own, other, world).chain((path) =>
    fc.record({
      query: queryArbitrary(op, own, other),
      body: bodyArbitrary(
        op,
        own,
        other,
        isInvoke(op) ? invokeBody(world, path.find((p) => p.name === "operation_id")?.value) : undefined
      ),
      headers: headerArbitrary(op)
    }).chain(({ body, headers, query }) =>
      (body.kind === "none"
        ? fc.oneof(
          { withCrossShrink: true },
          { weight: 3, arbitrary: fc.constant<ContentType>("none") },
          fc.constant<ContentType>("application/json")
        )
        : contentType).map((ct): FuzzRequest => ({
          operation: op.key,
          org: own.label,
          path,
          query: query.query,
          oddQuery: query.oddQuery,
          contentType: ct,
          body,
          headers
        }))
    )
  )

/** Requests over every operation of the document, made as either organization. */
export const requestArbitrary = (operations: ReadonlyArray<Operation>, world: FuzzWorld): fc.Arbitrary<FuzzRequest> => {
  const [a, b] = world.orgs
  // a connector invoke reaches the target API (egress, passthrough): it gets more of the runs
  const weighted = operations.map((op) => ({ weight: isInvoke(op) ? 8 : 1, arbitrary: fc.constant(op) }))
  return fc.oneof(...weighted).chain((op) =>
    fc.boolean().chain((asB) => asB ? forOperation(op, b, a, world) : forOperation(op, a, b, world))
  )
}

/** The path as sent: each value percent-encoded, except that `.` and `..` stay what they are. */
export const pathOf = (op: Operation, request: FuzzRequest) => {
  let path = op.template
  for (const p of request.path) path = path.replace(`{${p.name}}`, encodeURIComponent(p.value))
  const query = request.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
  return query === "" ? path : `${path}?${query}`
}
