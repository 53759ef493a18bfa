import type { ImportReport } from "./ImportedConnector.js"

export type SpecVersion = "2.0" | "3.0" | "3.1"
export type JsonObject = Record<string, unknown>
/** A JSON Schema as produced while converting: subschemas may be booleans. */
export type Schema = JsonObject | boolean

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const escapeSegment = (segment: string | number) => String(segment).replace(/~/g, "~0").replace(/\//g, "~1")

/** Appends segments to a JSON pointer, escaping them. */
export const pointer = (base: string, ...segments: ReadonlyArray<string | number>) =>
  base + segments.map((segment) => "/" + escapeSegment(segment)).join("")

export const describe = (value: unknown) => value === null ? "null" : Array.isArray(value) ? "an array" : typeof value

type Located = { readonly found: true; readonly pointer: string; readonly value: unknown } | {
  readonly found: false
  readonly reason: string
}

/** Walks `segments` (already unescaped) from `root`; the canonical pointer is rebuilt from them. */
const walk = (root: unknown, base: string, segments: ReadonlyArray<string>): Located => {
  let value = root
  for (const segment of segments) {
    if (Array.isArray(value) && /^(0|[1-9]\d*)$/.test(segment) && Number(segment) < value.length) {
      value = value[Number(segment)]
    } else if (isObject(value) && Object.prototype.hasOwnProperty.call(value, segment)) {
      value = value[segment]
    } else {
      return { found: false, reason: "nothing at that location in the document" }
    }
  }
  return { found: true, pointer: pointer(base, ...segments), value }
}

const fragmentSegments = (ref: string): ReadonlyArray<string> | string => {
  if (!ref.startsWith("#")) return "external references are not fetched"
  let fragment: string
  try {
    fragment = decodeURIComponent(ref.slice(1))
  } catch {
    return "malformed URI fragment"
  }
  if (fragment === "") return []
  if (!fragment.startsWith("/")) return "anchor references are not supported"
  return fragment.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
}

/** Accumulates the report while one document is imported; warnings are de-duplicated by pointer and message. */
export class ImportContext {
  readonly warnings: Array<ImportReport["warnings"][number]> = []
  readonly skipped: Array<ImportReport["skipped"][number]> = []
  private readonly seen = new Set<string>()

  constructor(readonly document: JsonObject, readonly version: SpecVersion) {}

  warn(at: string, message: string): void {
    const key = `${at}\u0000${message}`
    if (this.seen.has(key)) return
    this.seen.add(key)
    this.warnings.push({ pointer: at, message })
  }

  skip(method: string, path: string, at: string, reason: string): void {
    this.skipped.push({ method, path, pointer: at, reason })
  }

  /**
   * Locates a local `$ref` in the document; a `#/$defs/...` ref that is not found at the document root is
   * also tried against `resource` (the enclosing schema), which is what authors of OAS 3.1 schemas mean.
   */
  locate(ref: string, resource?: { readonly pointer: string; readonly value: unknown }): Located {
    const segments = fragmentSegments(ref)
    if (typeof segments === "string") return { found: false, reason: segments }
    const located = walk(this.document, "", segments)
    if (!located.found && resource !== undefined && segments[0] === "$defs") {
      const inResource = walk(resource.value, resource.pointer, segments)
      if (inResource.found) return inResource
    }
    return located
  }

  /**
   * Follows a chain of `$ref`s of a non-schema object (parameter, request body, path item, security scheme).
   * Returns undefined, with a warning at `at`, when the chain leaves the document, breaks or loops.
   */
  resolve(value: unknown, at: string): { readonly value: unknown; readonly pointer: string } | undefined {
    let current = value
    let currentPointer = at
    const visited = new Set<string>()
    while (isObject(current) && typeof current.$ref === "string") {
      const ref = current.$ref
      const refPointer = pointer(currentPointer, "$ref")
      const located = this.locate(ref)
      if (!located.found) {
        this.warn(refPointer, `unresolved $ref "${ref}": ${located.reason}`)
        return undefined
      }
      if (visited.has(located.pointer)) {
        this.warn(refPointer, `unresolved $ref "${ref}": circular reference`)
        return undefined
      }
      visited.add(located.pointer)
      current = located.value
      currentPointer = located.pointer
    }
    return { value: current, pointer: currentPointer }
  }
}
