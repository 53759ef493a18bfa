import { JSONSchema, type Schema } from "effect"
import { ErrorBody } from "../../schema/Errors.js"

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

// Effect marks its `{}` schema (what `Schema.Struct({})` becomes) with this `$id`
const EMPTY_STRUCT_ID = "/schemas/%7B%7D"

/**
 * A tool's `inputSchema`: the JSON Schema (2020-12) of its Effect Schema, made into one self-contained
 * document that validators compile in strict mode (test/mcp/ToolSchemas.test.ts compiles every tool's with
 * ajv). Effect's output needs three repairs for that:
 * - its `$id`s (`/schemas/unknown`, `/schemas/%7B%7D`, …) are markers, not identifiers: relative, and repeated
 *   as often as the shape occurs, so a validator finds one id naming several schemas;
 * - a `$ref` into `$defs` with keywords beside it (`{"$ref": "#/$defs/Int", "minimum": 1}`) leaves those
 *   keywords without a type in strict mode, and many model clients do not follow `$ref` at all: references
 *   are inlined (a recursive one, which cannot be, is kept with its definitions);
 * - a tool without arguments (`Schema.Struct({})`) comes out as "an object or an array"; MCP arguments are
 *   always an object.
 */
export const toolInputSchema = (schema: Schema.Schema<any, any, never>): Json => {
  const { $defs, $schema: _, ...root } = JSONSchema.make(schema, { target: "jsonSchema2020-12" }) as unknown as Json
  const defs = isObject($defs) ? $defs : {}
  const kept = new Set<string>()

  const clean = (node: unknown, resolving: ReadonlyArray<string>): unknown => {
    if (Array.isArray(node)) return node.map((item) => clean(item, resolving))
    if (!isObject(node)) return node
    const { $id: _id, $ref, ...rest } = node
    const siblings = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, clean(value, resolving)]))
    const name = typeof $ref === "string" && $ref.startsWith("#/$defs/") ? $ref.slice("#/$defs/".length) : undefined
    if (name === undefined || !(name in defs)) return $ref === undefined ? siblings : { $ref, ...siblings }
    if (resolving.includes(name)) {
      kept.add(name)
      return { $ref, ...siblings }
    }
    // the definition's own annotations give way to those written where it is used
    return { ...(clean(defs[name], [...resolving, name]) as Json), ...siblings }
  }

  const { $id, anyOf: _anyOf, ...annotations } = root
  const body = $id === EMPTY_STRUCT_ID
    ? { ...annotations, properties: {}, additionalProperties: false }
    : clean(root, []) as Json
  const stillReferenced: Json = {}
  // a Set's iteration also visits the names that cleaning a definition adds
  for (const name of kept) stillReferenced[name] = clean(defs[name], [name])
  return { type: "object", ...body, ...(kept.size === 0 ? {} : { $defs: stillReferenced }) }
}

const errorSchema = toolInputSchema(ErrorBody)

/**
 * A tool's `outputSchema` (MCP 2025-06-18), what its `structuredContent` is: its output (an array wrapped as
 * `{"items": […]}`, McpAnswer.ts `asStructured`), or a tool error's `{"error": {code, message, details}}`,
 * which clients validate too.
 */
export const toolOutputSchema = (schema: Schema.Schema<any, any, never>): Json => {
  const { $defs, type, ...output } = toolInputSchema(schema)
  const structured = type === "array"
    ? { type: "object", required: ["items"], properties: { items: { type, ...output } }, additionalProperties: false }
    : { type, ...output }
  return { type: "object", anyOf: [structured, errorSchema], ...($defs === undefined ? {} : { $defs }) }
}
