import { FastCheck as fc } from "effect"

/** Path and identifier values no id should be: junk, overlong, dot segments, NUL, unicode, injection. */
export const hostileId: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "-1",
      "0",
      "agt_x",
      "x".repeat(200),
      "a".repeat(129),
      "..",
      ".",
      "\u0000",
      "a\u0000b",
      "é",
      "日本語",
      "😀",
      "\u202e",
      "null",
      "undefined",
      "true",
      "NaN",
      "1e309",
      "__proto__",
      "00000000-0000-0000-0000-000000000000",
      "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
      "{00000000-0000-0000-0000-000000000000}",
      "0000000000000000000000000000000000000000",
      "' OR 1=1 --",
      "%",
      "a/b",
      " ",
      "sy_abc"
    )
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.fullUnicodeString({ maxLength: 12 }) }
)

/** Query values a parser must refuse or handle: odd dates, numbers out of range, NUL, junk. */
export const oddQueryValue: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      "not-a-date",
      "9999-99-99",
      "2024-02-30T00:00:00Z",
      "0000-00-00",
      "+275760-09-13T00:00:00.000Z",
      "-1",
      "0",
      "-99999999999999999999",
      "99999999999999999999",
      "1e309",
      "NaN",
      "",
      "\u0000",
      "x".repeat(300),
      "true",
      "[]",
      "日本語"
    )
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.integer().map(String) }
)

/** Bodies that are not the JSON object an operation takes. */
export const nonObjectJson = fc.constantFrom("[1,2]", "\"str\"", "null", "42", "true", "[]", "{}", "[{}]")
export const invalidJson = fc.constantFrom("{", "{\"name\":", "not json", "{'name':'x'}", "\u0000", "{\"a\":1}}", "")

/** `[[[…]]]` or `{"a":{"a":…}}`: around and beyond the server's nesting limit. */
export const deepJson = fc.record({ depth: fc.constantFrom(63, 65, 200, 5000), array: fc.boolean() }).map((
  { array, depth }
) => array ? "[".repeat(depth) + "]".repeat(depth) : "{\"a\":".repeat(depth) + "1" + "}".repeat(depth))

/** How the request's body is labelled: the JSON ones, JSON-suffixed ones, and ones that are not JSON. */
export const CONTENT_TYPES = [
  "application/json",
  "application/merge-patch+json",
  "application/vnd.api+json",
  "text/plain",
  "none",
  "application/json; charset=utf-8",
  "application/x-www-form-urlencoded"
] as const
export type ContentType = (typeof CONTENT_TYPES)[number]
export const isJsonContentType = (ct: ContentType) => ct !== "text/plain" && ct !== "none" && !ct.includes("form")

export const contentType: fc.Arbitrary<ContentType> = fc.oneof(
  { withCrossShrink: true },
  { weight: 6, arbitrary: fc.constant("application/json" as const) },
  { weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES.slice(1)) }
)

/** `value` with its `pick`-th string leaf changed by `f` (a top-level `name` when it has none). */
export const changeOneString = (value: unknown, pick: number, f: (s: string) => string): unknown => {
  const copy = structuredClone(value)
  const leaves: Array<readonly [holder: any, key: string | number]> = []
  const collect = (holder: any, key: string | number) => {
    const v = holder[key]
    if (typeof v === "string") leaves.push([holder, key])
    else if (Array.isArray(v)) v.forEach((_, i) => collect(v, i))
    else if (typeof v === "object" && v !== null) Object.keys(v).forEach((k) => collect(v, k))
  }
  const root = { value: copy }
  collect(root, "value")
  if (leaves.length === 0) {
    return typeof copy === "object" && copy !== null && !Array.isArray(copy) ? { ...copy, name: f("x") } : copy
  }
  const [holder, key] = leaves[pick % leaves.length]!
  holder[key] = f(holder[key])
  return root.value
}

/** Replaces every `*_id` string and `*_ids` array member with ids from `pool` (by the field's name). */
export const withIds = (
  value: unknown,
  pool: (field: string) => ReadonlyArray<string>,
  pick: number
): { readonly value: unknown; readonly replaced: boolean } => {
  let replaced = false
  let n = pick
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk)
    if (typeof v !== "object" || v === null) return v
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) {
      const ids = /_ids?$/.test(k) ? pool(k.replace(/_ids$/, "_id")) : []
      if (ids.length > 0 && typeof x === "string") {
        out[k] = ids[n++ % ids.length]
        replaced = true
      } else if (ids.length > 0 && Array.isArray(x) && x.every((e) => typeof e === "string")) {
        out[k] = x.map(() => ids[n++ % ids.length])
        replaced = replaced || x.length > 0
      } else out[k] = walk(x)
    }
    return out
  }
  return { value: walk(value), replaced }
}
