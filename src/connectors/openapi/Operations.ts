import { type ImportContext, isObject, type JsonObject, pointer, type Schema } from "./ImportContext.js"
import type { HttpMethod, SecurityScheme } from "./ImportedConnector.js"
import { operationSlug, uniqueName } from "./Naming.js"
import { type DeclaredParameter, declaredParameters, type DraftParameter, mergeParameters } from "./Parameters.js"
import { type DeclaredBody, openApiBody, swaggerBody } from "./RequestBody.js"
import type { SchemaConverter } from "./SchemaConverter.js"
import { type SecurityRequirement, securityRequirementsOf } from "./Security.js"
import { openApiServers } from "./Servers.js"

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
  /** The operation's or its path item's own servers; empty: the document's. */
  readonly servers: ReadonlyArray<string>
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

/** The apiKey security scheme that sends `parameter` (same place and name), if any. */
const apiKeyScheme = (schemes: Readonly<Record<string, SecurityScheme>>, parameter: DraftParameter) =>
  Object.entries(schemes).find(([, scheme]) =>
    scheme.type === "apiKey" && scheme.in === parameter.in &&
    (parameter.in === "header"
      ? scheme.name.toLowerCase() === parameter.name.toLowerCase()
      : scheme.name === parameter.name)
  )?.[0]

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
    const pathServers = openApiServers(ctx, item.fields.servers, item.at("servers"))
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
      // paths that differ only in punctuation (`/a.b`, `/a_b`, `/a/b/`) share a slug: the later ones get a suffix
      const slug = operationSlug(method, path)
      const id = uniqueName(slug, idOwners)
      const draft = operationDraft(ctx, converter, {
        id,
        method,
        path,
        at,
        source,
        operation,
        shared,
        schemes,
        pathServers
      })
      if (draft === undefined) continue
      if (id !== slug) {
        ctx.warn(at, `operation id "${slug}" is already used by ${idOwners.get(slug)}; this one is "${id}"`)
      }
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
  readonly pathServers: ReadonlyArray<string>
}

const operationDraft = (ctx: ImportContext, converter: SchemaConverter, input: DraftInput) => {
  const { at, id, method, operation, path, pathServers, schemes, shared, source } = input
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
    const key = apiKeyScheme(schemes, parameter)
    if (key !== undefined) {
      // in the input it could never be sent: the caller may not set what the credentials set
      ctx.warn(
        pointer(source, "parameters"),
        `${parameter.in} parameter "${parameter.name}" is the API key of security scheme "${key}"; ` +
          "the connection's credentials send it, so it is not part of the input"
      )
      return false
    }
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
  // an operation's own servers win over its path item's (GitHub's release uploads go to another host)
  const ownServers = openApiServers(ctx, operation.servers, pointer(source, "servers"))
  const servers = ownServers.length > 0 ? ownServers : pathServers
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
    security: securityRequirementsOf(ctx, operation.security, pointer(source, "security"), schemes) ?? null,
    servers
  }
  return draft
}
