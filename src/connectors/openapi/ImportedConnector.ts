/**
 * The shapes an OpenAPI import produces. Types only: every step of the import names them, and the import itself
 * (`OpenApiImport.ts`) uses every step, so they live apart from both.
 */
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

/** One field of a form or multipart body: its style (as a query parameter's) and, in multipart, its part's type. */
export interface BodyEncoding {
  readonly style: string
  readonly explode: boolean
  readonly contentType?: string
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
  readonly body: {
    readonly contentType: string
    readonly required: boolean
    readonly schema: JsonSchema
    /** How the fields of a form or multipart body are written, by field name (OAS 3 `encoding`); absent: defaults. */
    readonly encoding?: Readonly<Record<string, BodyEncoding>>
  } | null
  /** The operation's own requirement; null = inherit the document's. */
  readonly security: ReadonlyArray<Readonly<Record<string, ReadonlyArray<string>>>> | null
  /** The operation's own servers (OAS 3 operation- or path-level), used before the document's; absent: none. */
  readonly servers?: ReadonlyArray<string>
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
