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
import type { Operation } from "./Operations.js"

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
  operation_id: (w) => w.operationNames
}

const pathValue = (
  op: Operation,
  name: string,
  last: boolean,
  own: Organization,
  other: Organization,
  world: FuzzWorld
): fc.Arbitrary<PathValue> => {
  const tagged = (source: Source) => (value: string) => ({ name, value, source })
  const hostile = { weight: 3, arbitrary: hostileId.map(tagged("hostile")) }
  const formatted = wireArbitrary(op.pathSchema)?.map((v: any) => String(v?.[name] ?? ""))
  const names = NAMES[name]?.(world)
  if (names !== undefined || own.ids[name] === undefined) {
    // not an object of an organization (an operation name, a provider): its valid values, or junk
    const valid = names !== undefined ? fc.constantFrom(...names) : formatted
    return valid === undefined
      ? hostile.arbitrary
      : fc.oneof({ withCrossShrink: true }, { weight: 5, arbitrary: valid.map(tagged("name")) }, hostile)
  }
  const format = formatted?.map(tagged("format"))
  const pool = own.ids[name]!
  const mine = op.destructive && last ? pool.spend : pool.use.length > 0 ? pool.use : pool.spend
  const theirs = [...(other.ids[name]?.use ?? []), ...(other.ids[name]?.spend ?? [])]
  const choices: Array<fc.WeightedArbitrary<PathValue>> = []
  if (mine.length > 0) choices.push({ weight: 6, arbitrary: fc.constantFrom(...mine).map(tagged("own")) })
  if (theirs.length > 0) choices.push({ weight: 2, arbitrary: fc.constantFrom(...theirs).map(tagged("other")) })
  if (format !== undefined) choices.push({ weight: 1, arbitrary: format })
  choices.push(hostile)
  return fc.oneof({ withCrossShrink: true }, ...choices)
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

const bodyArbitrary = (op: Operation, own: Organization, other: Organization): fc.Arbitrary<Body> => {
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
  fc.record({
    path: fc.tuple(
      ...op.pathParams.map((name, i) => pathValue(op, name, i === op.pathParams.length - 1, own, other, world))
    ) as fc.Arbitrary<Array<PathValue>>,
    query: queryArbitrary(op, own, other),
    body: bodyArbitrary(op, own, other),
    headers: headerArbitrary(op)
  }).chain(({ body, headers, path, query }) =>
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

/** Requests over every operation of the document, made as either organization. */
export const requestArbitrary = (operations: ReadonlyArray<Operation>, world: FuzzWorld): fc.Arbitrary<FuzzRequest> => {
  const [a, b] = world.orgs
  return fc.constantFrom(...operations).chain((op) =>
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
