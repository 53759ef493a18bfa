/**
 * What a `Range` header (RFC 9110 §14) asks of a file of `size` bytes. One `bytes=` range is served: a
 * `first-last`, `first-` or `-suffix` one. Several ranges, another unit or a malformed header are refused
 * (400 `invalid_range`) rather than silently answered with the whole file: a client that asked for a part
 * is told why it did not get one.
 */
export type ByteRange =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Part"; readonly start: number; readonly end: number }
  | { readonly _tag: "Unsatisfiable" }
  | { readonly _tag: "Invalid"; readonly message: string }

const DIGITS = /^\d+$/

/** A byte position; one past any file's size (more than 15 digits) counts as the largest (RFC 9110 clamps it). */
const position = (digits: string) => digits.length > 15 ? Number.MAX_SAFE_INTEGER : Number(digits)

const invalid = (message: string): ByteRange => ({ _tag: "Invalid", message })

export const parseRange = (header: string | undefined, size: number): ByteRange => {
  if (header === undefined) return { _tag: "Whole" }
  const value = header.trim()
  const eq = value.indexOf("=")
  if (eq === -1 || value.slice(0, eq).trim().toLowerCase() !== "bytes") {
    return invalid("`Range` must be a byte range, e.g. `bytes=0-1023`, `bytes=1024-` or `bytes=-500`.")
  }
  const specs = value.slice(eq + 1).split(",").map((s) => s.trim())
  if (specs.length !== 1) return invalid("`Range` may name one range only; request the parts one by one.")
  const spec = specs[0]!
  const dash = spec.indexOf("-")
  const first = spec.slice(0, dash).trim()
  const last = spec.slice(dash + 1).trim()
  if (
    dash === -1 || (first === "" && last === "") || (first !== "" && !DIGITS.test(first)) ||
    (last !== "" && !DIGITS.test(last))
  ) {
    return invalid(`\`Range\`: \`${spec}\` is not \`first-last\`, \`first-\` or \`-suffix\` in bytes.`)
  }
  if (first === "") {
    // the last `suffix` bytes
    const suffix = position(last)
    return suffix === 0 || size === 0
      ? { _tag: "Unsatisfiable" }
      : { _tag: "Part", start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = position(first)
  if (last !== "" && position(last) < start) {
    return invalid(`\`Range\`: \`${spec}\` ends before it starts.`)
  }
  if (start >= size) return { _tag: "Unsatisfiable" }
  return { _tag: "Part", start, end: last === "" ? size - 1 : Math.min(position(last), size - 1) }
}

/** Whether an `If-None-Match` list (or `*`) names this entity tag; weak comparison, as RFC 9110 §13.1.2 says. */
export const noneMatch = (header: string | undefined, etag: string): boolean => {
  if (header === undefined) return false
  if (header.trim() === "*") return true
  const bare = (tag: string) => tag.trim().replace(/^W\//, "")
  return header.split(",").some((tag) => bare(tag) === etag)
}

/**
 * Whether a `Range` is to be honoured under `If-Range`: only when the validator is our (strong) entity tag.
 * A date, or another tag, means the client's copy may be stale: it gets the whole file.
 */
export const rangeStillValid = (ifRange: string | undefined, etag: string): boolean =>
  ifRange === undefined || ifRange.trim() === etag
