import { Options } from "@effect/cli"
import type { HttpApiEndpoint } from "@effect/platform"
import { Effect, JSONSchema, Option } from "effect"
import { CliFailure } from "./CliFailure.js"
import { sanitize } from "./Terminal.js"

export interface ParamRange {
  readonly min: number
  readonly max: number
}

/**
 * The range the contract gives a query parameter: the `minimum` and `maximum` of its JSON Schema, as the API
 * document states them (schema/QueryParams.ts). An option checks its value with it before any request, so the
 * CLI's range cannot drift from the server's.
 */
export const paramRange = (endpoint: HttpApiEndpoint.HttpApiEndpoint.Any, param: string): ParamRange => {
  const { urlParamsSchema } = endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  const property: any = Option.match(urlParamsSchema, {
    onNone: () => undefined,
    onSome: (schema) => (JSONSchema.make(schema) as any).properties?.[param]
  })
  if (typeof property?.minimum !== "number" || typeof property?.maximum !== "number") {
    throw new Error(`${endpoint.name} has no query parameter ${param} with a minimum and a maximum`)
  }
  return { min: property.minimum, max: property.maximum }
}

/** `--wait 100`: the caller's mistake (exit 2), told before any request. */
export const inRange = (option: string, range: ParamRange) => (value: number) =>
  value >= range.min && value <= range.max
    ? Effect.succeed(value)
    : Effect.fail(CliFailure.usage(`${option} must be between ${range.min} and ${range.max}, not ${value}`))

/** `--limit N` (50 unless given, checked against `range` with `inRange`) and `--cursor` of a command that lists pages. */
export const pageOptions = (range: ParamRange) => ({
  limit: Options.integer("limit").pipe(
    Options.withPseudoName("N"),
    Options.withDescription(`Page size, ${range.min}-${range.max}.`),
    Options.withDefault(50)
  ),
  cursor: Options.text("cursor").pipe(
    Options.withPseudoName("CURSOR"),
    Options.withDescription("The next page (printed under the table)."),
    Options.optional
  )
})

/** The line under a page's table that names the next page's `--cursor`; none on the last page. */
export const nextPageLine = (cursor: string | null) => cursor === null ? "" : `\nMore: --cursor ${sanitize(cursor)}\n`
