import { detectVersion, readDocument } from "./DocumentSource.js"
import { describe, ImportContext, isObject, type JsonObject } from "./ImportContext.js"
import { OpenApiImportError } from "./OpenApiImportError.js"
import { assembleOperation } from "./OperationAssembly.js"
import { nameOperations } from "./OperationNames.js"
import { operationDrafts } from "./Operations.js"
import { SchemaConverter } from "./SchemaConverter.js"
import { securityRequirementsOf, securitySchemesOf } from "./Security.js"
import { serversOf } from "./Servers.js"

export { OpenApiImportError } from "./OpenApiImportError.js"

export type HttpMethod = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace"
/** A JSON Schema 2020-12 object. */
export type JsonSchema = { readonly [key: string]: unknown }

export interface ImportedParameter {
  readonly name: string
  readonly in: "path" | "query" | "header" | "cookie"
  readonly required: boolean
  /** OAS 3 style; defaulted per location (path/header: simple, query/cookie: form). */
  readonly style: string
  readonly explode: boolean
  /** Self-contained: carries the `$defs` its recursive refs need. */
  readonly schema: JsonSchema
  readonly description?: string
}

export interface ImportedOperation {
  /** Stable, URL-safe, unique within the connector: `${method}_${slug(path)}`. */
  readonly id: string
  /** From the document; generated (camelCase from method and path) when missing. */
  readonly operationId: string
  readonly method: HttpMethod
  /** As in the document, e.g. "/pets/{petId}". */
  readonly path: string
  readonly pretty_name: string
  readonly pretty_description: string
  readonly tags: ReadonlyArray<string>
  /** Path-level and operation-level parameters merged (the operation's win by name and location). */
  readonly parameters: ReadonlyArray<ImportedParameter>
  readonly body: { readonly contentType: string; readonly required: boolean; readonly schema: JsonSchema } | null
  /** The operation's own requirement; null = inherit the document's. */
  readonly security: ReadonlyArray<Readonly<Record<string, ReadonlyArray<string>>>> | null
  /** What the invoke call accepts: path_params, query_params, body_params, headers (spec 2.5). */
  readonly input: JsonSchema
}

export type SecurityScheme =
  | {
    readonly type: "apiKey"
    readonly in: "header" | "query" | "cookie"
    readonly name: string
    readonly description?: string
  }
  | {
    readonly type: "http"
    readonly scheme: "bearer" | "basic"
    readonly bearerFormat?: string
    readonly description?: string
  }
  | {
    readonly type: "oauth2"
    readonly flows: {
      readonly authorizationCode?: {
        readonly authorizationUrl: string
        readonly tokenUrl: string
        readonly refreshUrl?: string
        readonly scopes: Readonly<Record<string, string>>
      }
      readonly clientCredentials?: {
        readonly tokenUrl: string
        readonly refreshUrl?: string
        readonly scopes: Readonly<Record<string, string>>
      }
    }
    readonly description?: string
  }
  | { readonly type: "openIdConnect"; readonly openIdConnectUrl: string; readonly description?: string }

export interface ImportReport {
  readonly imported: number
  readonly skipped: ReadonlyArray<
    { readonly method: string; readonly path: string; readonly pointer: string; readonly reason: string }
  >
  readonly warnings: ReadonlyArray<{ readonly pointer: string; readonly message: string }>
}

export interface ImportedConnector {
  readonly specVersion: "2.0" | "3.0" | "3.1"
  readonly title: string
  readonly description: string
  readonly version: string
  /** Base URLs, server variables substituted by their defaults; relative ones stay relative. */
  readonly servers: ReadonlyArray<string>
  readonly securitySchemes: Readonly<Record<string, SecurityScheme>>
  /** The document-level requirement. */
  readonly security: ReadonlyArray<Readonly<Record<string, ReadonlyArray<string>>>>
  readonly operations: ReadonlyArray<ImportedOperation>
  readonly report: ImportReport
}

const pathsOf = (ctx: ImportContext): JsonObject => {
  const { components, paths, webhooks } = ctx.document
  if (paths === undefined) {
    // OAS 3.1 only needs one of paths, webhooks and components
    if (ctx.version === "3.1" && (webhooks !== undefined || components !== undefined)) return {}
    const needs = ctx.version === "3.1" ? " (OpenAPI 3.1 needs paths, webhooks or components)" : ""
    throw new OpenApiImportError(`The "paths" object is missing${needs}`, "/paths")
  }
  if (!isObject(paths)) throw new OpenApiImportError(`"paths" must be an object, got ${describe(paths)}`, "/paths")
  return paths
}

const text = (value: unknown) => typeof value === "string" ? value : typeof value === "number" ? String(value) : ""

/**
 * Imports an OpenAPI 3.0 / 3.1 or Swagger 2.0 document (an object, or JSON / YAML text) as a connector
 * description. Problems that only affect part of the document end up in `report`; a document that
 * cannot be read at all throws `OpenApiImportError`.
 */
export const importOpenApi = (document: unknown): ImportedConnector => {
  const source = readDocument(document)
  const { notes, version } = detectVersion(source)
  const ctx = new ImportContext(source, version)
  notes.forEach((note) => ctx.warn(note.pointer, note.message))
  const paths = pathsOf(ctx)
  const info = isObject(source.info) ? source.info : {}
  if (typeof info.title !== "string") ctx.warn("/info/title", "the document has no title")

  const converter = new SchemaConverter(ctx)
  const servers = serversOf(ctx)
  const securitySchemes = securitySchemesOf(ctx)
  const security = securityRequirementsOf(ctx, source.security, "/security", securitySchemes) ?? []
  const drafts = operationDrafts(ctx, converter, paths, securitySchemes)
  converter.seal()
  const operationIds = nameOperations(ctx, drafts)
  const operations = drafts.map((draft, index) => assembleOperation(converter, draft, operationIds[index]!))

  if (isObject(source.webhooks) && Object.keys(source.webhooks).length > 0) {
    ctx.warn(
      "/webhooks",
      `${Object.keys(source.webhooks).length} webhook(s) not imported: a connector only calls the API`
    )
  }
  if (operations.length === 0) ctx.warn("/paths", "the document has no importable operations")
  return {
    specVersion: version,
    title: text(info.title),
    description: text(info.description),
    version: text(info.version),
    servers,
    securitySchemes,
    security,
    operations,
    report: { imported: operations.length, skipped: ctx.skipped, warnings: ctx.warnings }
  }
}
