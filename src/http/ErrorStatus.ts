import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import * as Errors from "../../schema/Errors.js"

/** A wire schema decodes any envelope to its class: one decode names the class's tag. */
const tagOf = (wire: Schema.Schema.Any): string | undefined => {
  const decoded = Schema.decodeUnknownOption(wire as Schema.Schema<any, any>)({ error: { code: "", message: "" } })
  return decoded._tag === "Some" && typeof decoded.value?._tag === "string" ? decoded.value._tag : undefined
}

/**
 * Each error class's HTTP status by its tag, for the plain-Node fast paths that write errors themselves. Read
 * from the status each wire schema in schema/Errors.ts is annotated with, so an error added there has its
 * status here too, and the contract stays free of mutable state.
 */
export const statusOfError: ReadonlyMap<string, number> = new Map(
  Object.values(Errors).flatMap((value): Array<[string, number]> => {
    if (!Schema.isSchema(value)) return []
    const status = HttpApiSchema.getStatus(value.ast, 0)
    const tag = status === 0 ? undefined : tagOf(value)
    return tag === undefined ? [] : [[tag, status]]
  })
)
