import { type ImportContext, isObject, type JsonObject, pointer, type Schema } from "./ImportContext.js"
import type { HttpMethod, SecurityScheme } from "./ImportedConnector.js"
import { operationSlug } from "./Naming.js"
import { type DeclaredParameter, declaredParameters, type DraftParameter, mergeParameters } from "./Parameters.js"
import { type DeclaredBody, openApiBody, swaggerBody } from "./RequestBody.js"
import type { SchemaConverter } from "./SchemaConverter.js"
import { type SecurityRequirement, securityRequirementsOf } from "./Security.js"

export const HTTP_METHODS: ReadonlyArray<HttpMethod> = [
  "get",
  "put",
  "post",
  "delete",
  "options",
  "head",
  "patch",
  "trace"
]

/** An operation before its operationId is settled across the document and its schemas are finished. */
export interface OperationDraft {
  readonly id: string
  readonly method: HttpMethod
  readonly path: string
  /** Where the operation is used in the document. */
  readonly at: string
  readonly declaredOperationId: unknown
  readonly summary: string | undefined
  readonly description: string | undefined
  readonly tags: ReadonlyArray<string>
  readonly parameters: ReadonlyArray<{ readonly parameter: DraftParameter; readonly core: Schema }>
  readonly body: DeclaredBody | null
  readonly security: ReadonlyArray<SecurityRequirement> | null
}

/** A path item with its `$ref` (if any) followed; `at` says where each field was written. */
interface PathItem {
  readonly fields: JsonObject
  readonly at: (field: string) => string
}

const pathItemOf = (ctx: ImportContext, raw: unknown, path: string, at: string): PathItem | undefined => {
  if (!isObject(raw)) {
    ctx.skip("*", path, at, "path item is not an object")
    return undefined
  }
  if (typeof raw.$ref !== "string") return { fields: raw, at: (field) => pointer(at, field) }
  const resolved = ctx.resolve({ $ref: raw.$ref }, at)
  if (resolved === undefined || !isObject(resolved.value)) {
    const reason = resolved === undefined ? `unresolved $ref "${raw.$ref}"` : "referenced path item is not an object"
    ctx.skip("*", path, at, reason)
    return undefined
  }
  const { $ref: _, ...siblings } = raw
  return {
    fields: { ...resolved.value, ...siblings },
    at: (field) => field in siblings ? pointer(at, field) : pointer(resolved.pointer, field)
  }
}

const optionalText = (value: unknown) => typeof value === "string" && value.trim() !== "" ? value : undefined

const quoteList = (names: ReadonlyArray<string>) => names.map((name) => `"${name}"`).join(", ")

/** Every operation of `paths`, in document order; operations that cannot be called are skipped. */
export const operationDrafts = (
  ctx: ImportContext,
  converter: SchemaConverter,
  paths: JsonObject,
  schemes: Readonly<Record<string, SecurityScheme>>
): Array<OperationDraft> => {
  const drafts: Array<OperationDraft> = []
  const idOwners = new Map<string, string>()
  for (const [path, raw] of Object.entries(paths)) {
    if (path.startsWith("x-")) continue
    const item = pathItemOf(ctx, raw, path, pointer("/paths", path))
    if (item === undefined) continue
    if (item.fields.servers !== undefined) {
      ctx.warn(item.at("servers"), "path-level servers are ignored; the connector uses the document's servers")
    }
    const shared = declaredParameters(ctx, converter, item.fields.parameters, item.at("parameters"))
    for (const [key, operation] of Object.entries(item.fields)) {
      const method = key.toLowerCase() as HttpMethod
      if (!HTTP_METHODS.includes(method)) continue
      // `at` is where the operation is used, `source` where it is written (they differ behind a path item $ref)
      const at = pointer("/paths", path, key)
      const source = item.at(key)
      if (key !== method) ctx.warn(source, `method "${key}" is not lower-case; imported as ${method}`)
      if (!isObject(operation)) {
        ctx.skip(method, path, at, "operation is not an object")
        continue
      }
      const id = operationSlug(method, path)
      const owner = idOwners.get(id)
      if (owner !== undefined) {
        ctx.skip(method, path, at, `operation id "${id}" is already used by ${owner}`)
        continue
      }
      const draft = operationDraft(ctx, converter, { id, method, path, at, source, operation, shared, schemes })
      if (draft === undefined) continue
      idOwners.set(id, `${method.toUpperCase()} ${path}`)
      drafts.push(draft)
    }
  }
  return drafts
}

interface DraftInput {
  readonly id: string
  readonly method: HttpMethod
  readonly path: string
  readonly at: string
  readonly source: string
  readonly operation: JsonObject
  readonly shared: ReadonlyArray<DeclaredParameter>
  readonly schemes: Readonly<Record<string, SecurityScheme>>
}

const operationDraft = (ctx: ImportContext, converter: SchemaConverter, input: DraftInput) => {
  const { at, id, method, operation, path, schemes, shared, source } = input
  const declared = mergeParameters(
    shared,
    declaredParameters(ctx, converter, operation.parameters, pointer(source, "parameters"))
  )
  const template = [...path.matchAll(/\{([^{}]+)\}/g)].map((match) => match[1] ?? "")
  const parameters = declared.flatMap((declaration) => declaration.kind === "parameter" ? [declaration] : [])
  const defined = new Set(parameters.filter(({ parameter }) => parameter.in === "path").map((p) => p.parameter.name))
  const undefinedNames = template.filter((name) => !defined.has(name))
  if (undefinedNames.length > 0) {
    const [noun, verb] = undefinedNames.length === 1 ? ["parameter", "has"] : ["parameters", "have"]
    ctx.skip(method, path, at, `path ${noun} ${quoteList(undefinedNames)} in the path template ${verb} no definition`)
    return undefined
  }
  const kept = parameters.filter(({ parameter }) => {
    if (parameter.in === "path" && !template.includes(parameter.name)) {
      ctx.warn(pointer(source, "parameters"), `path parameter "${parameter.name}" is not in the path template; ignored`)
      return false
    }
    if (parameter.in === "cookie") {
      ctx.warn(
        pointer(source, "parameters"),
        `cookie parameter "${parameter.name}" is not part of the input; send it in headers.cookie`
      )
    }
    return true
  })
  if (operation.servers !== undefined) {
    ctx.warn(
      pointer(source, "servers"),
      "operation-level servers are ignored; the connector uses the document's servers"
    )
  }
  const body: DeclaredBody | null = ctx.version === "2.0"
    ? swaggerBody(ctx, declared, operation, source)
    : openApiBody(ctx, converter, operation.requestBody, pointer(source, "requestBody"))
  const draft: OperationDraft = {
    id,
    method,
    path,
    at,
    declaredOperationId: operation.operationId,
    summary: optionalText(operation.summary),
    description: optionalText(operation.description),
    tags: Array.isArray(operation.tags) ? operation.tags.filter((tag): tag is string => typeof tag === "string") : [],
    parameters: kept.map(({ core, parameter }) => ({ parameter, core })),
    body,
    security: securityRequirementsOf(ctx, operation.security, pointer(source, "security"), schemes) ?? null
  }
  return draft
}
