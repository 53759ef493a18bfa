/**
 * Reading untyped provider JSON. Providers add fields, omit "optional" ones and local servers deviate in
 * small ways, so the adapters read leniently field by field instead of validating whole documents.
 */
import { ModelError } from "./ModelProvider.js"

export type JsonRecord = { readonly [k: string]: unknown }

export const asRecord = (value: unknown): JsonRecord | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as JsonRecord : undefined

export const asArray = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []

export const asString = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** The most tokens one count may say: what the usage records (`int` columns) hold, far above any context window. */
export const MAX_TOKENS = 2 ** 31 - 1

/**
 * A token count the server reported as `field`. Left out (or null) it counts as 0, as servers that omit usage
 * do; anything else must be a whole number from 0 to MAX_TOKENS. A count past that is no count a model can
 * make: taken as it is, it was stored nowhere (an integer out of range) and spent the budget without end, so
 * the call fails instead, saying what the server sent.
 */
export const asCount = (value: unknown, field: string): number => {
  if (value === undefined || value === null) return 0
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_TOKENS) return value
  throw new ModelError({
    code: "model_bad_usage",
    message: `the model server reported ${field} = ${JSON.stringify(value)}, which is no token count (a whole ` +
      `number from 0 to ${MAX_TOKENS} is): the call is not counted`,
    retryable: false
  })
}

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
