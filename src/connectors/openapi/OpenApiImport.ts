import { detectVersion, readDocument } from "./DocumentSource.js"
import { describe, ImportContext, isObject, type JsonObject } from "./ImportContext.js"
import type { ImportedConnector } from "./ImportedConnector.js"
import { OpenApiImportError } from "./OpenApiImportError.js"
import { assembleOperation } from "./OperationAssembly.js"
import { nameOperations } from "./OperationNames.js"
import { operationDrafts } from "./Operations.js"
import { SchemaConverter } from "./SchemaConverter.js"
import { securityRequirementsOf, securitySchemesOf } from "./Security.js"
import { serversOf } from "./Servers.js"

export { OpenApiImportError } from "./OpenApiImportError.js"

export type {
  HttpMethod,
  ImportedConnector,
  ImportedOperation,
  ImportedParameter,
  ImportReport,
  JsonSchema,
  SecurityScheme
} from "./ImportedConnector.js"

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
