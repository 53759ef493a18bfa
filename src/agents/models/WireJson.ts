/**
 * Reading untyped provider JSON. Providers add fields, omit "optional" ones and local servers deviate in
 * small ways, so the adapters read leniently field by field instead of validating whole documents.
 */

export type JsonRecord = { readonly [k: string]: unknown }

export const asRecord = (value: unknown): JsonRecord | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as JsonRecord : undefined

export const asArray = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []

export const asString = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** Token counts: anything that is not a finite non-negative number counts as 0 rather than failing the call. */
export const asCount = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0

/**
 * Tool arguments as the model sent them. Empty means "no arguments" (models send "" for parameterless
 * tools); invalid JSON stays the raw string so the tool layer can tell the model what it got wrong.
 */
export const parseArguments = (raw: string): unknown => {
  if (raw.trim() === "") return {}
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

/** The inverse of `parseArguments`: a raw (invalid) string goes back verbatim, as the model produced it. */
export const serializeArguments = (args: unknown): string =>
  typeof args === "string" ? args : JSON.stringify(args ?? {})

/** Parses a JSON document; `undefined` when it is not JSON. */
export const tryParseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
