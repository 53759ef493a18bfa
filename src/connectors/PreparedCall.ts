import { Redacted } from "effect"
import type { AppliedCredentials } from "../../cluster/ConnectionEntity.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import type { ConnectionRow, ConnectorRow } from "./ConnectorRepo.js"
import type { ImportedParameter, JsonSchema } from "./openapi/ImportedConnector.js"
import { validatorFor } from "./openapi/InputValidator.js"
import type { ImportedOperation } from "./openapi/OpenApiImport.js"
import { defaultServer } from "./openapi/Servers.js"
import { buildRequest, type OutgoingRequest } from "./RequestBuilder.js"

export interface InvokeTarget {
  readonly connector: ConnectorRow
  readonly connection: ConnectionRow
  readonly operation: ImportedOperation
}

export type Prepared =
  | { readonly ok: true; readonly request: OutgoingRequest; readonly requestBytes: number }
  | {
    readonly ok: false
    readonly status: 400 | 422
    readonly code: string
    readonly message: string
    readonly details?: unknown
  }

/**
 * A connection with no credentials of its own, to an API that signs users in with OAuth2/OIDC, calls
 * it with the token of the user who asked, when the caller has one.
 */
const wantsUserToken = (target: InvokeTarget) =>
  target.connection.auth_type === "none" &&
  Object.values(target.connector.imported.securitySchemes).some((s) =>
    s.type === "oauth2" || s.type === "openIdConnect"
  )

const reveal = (record: Record<string, Redacted.Redacted<string>>) =>
  Object.fromEntries(Object.entries(record).map(([k, v]) => [k, Redacted.value(v)]))

interface DeclaredParameters {
  /** Header parameters by lower-case name. */
  readonly headers: ReadonlyMap<string, ImportedParameter>
  /** Query and path parameters whose schema is not a string (a number, a boolean), by `in:name`. */
  readonly typed: ReadonlyMap<string, ImportedParameter>
}
const declaredParameters = new WeakMap<ImportedOperation, DeclaredParameters>()
const declaredOf = (operation: ImportedOperation): DeclaredParameters => {
  let found = declaredParameters.get(operation)
  if (found === undefined) {
    const ps = operation.parameters
    const typed = ps.filter((p) => (p.in === "query" || p.in === "path") && !typesOf(p.schema).includes("string"))
    found = {
      headers: new Map(ps.filter((p) => p.in === "header").map((p) => [p.name.toLowerCase(), p])),
      typed: new Map(typed.map((p) => [`${p.in}:${p.name}`, p]))
    }
    declaredParameters.set(operation, found)
  }
  return found
}

/**
 * The types a parameter's schema allows, through what imports leave around them: a `$ref` into its `$defs` (a
 * large or recursive component) and `allOf`/`anyOf`/`oneOf` (ASP.NET's `allOf: [{$ref: SortOrder}]`).
 */
const typesOf = (schema: JsonSchema, root: JsonSchema = schema, depth = 0): ReadonlyArray<unknown> => {
  const own = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]
  if (depth > 8) return own
  const ref = typeof schema.$ref === "string" && schema.$ref.startsWith("#/$defs/")
    ? (root.$defs as Record<string, JsonSchema> | undefined)?.[schema.$ref.slice("#/$defs/".length)]
    : undefined
  const members = [ref, ...["allOf", "anyOf", "oneOf"].flatMap((k) => Array.isArray(schema[k]) ? schema[k] : [])]
  return [
    ...own,
    ...members.flatMap((member) =>
      typeof member === "object" && member !== null ? typesOf(member as JsonSchema, root, depth + 1) : []
    )
  ]
}

const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

/** A parameter's text as the value its schema describes (`"5"` for an integer is 5), for validation only. */
const textAsDeclared = (schema: JsonSchema, text: string): unknown => {
  const types = typesOf(schema)
  if (types.includes("string")) return text
  if ((types.includes("integer") || types.includes("number")) && NUMBER.test(text)) return Number(text)
  if (types.includes("boolean") && (text === "true" || text === "false")) return text === "true"
  return text
}

/** `values` (query or path parameters) with the text of those declared as numbers or booleans as such. */
const typedGroup = (
  declared: DeclaredParameters,
  location: "query" | "path",
  values: Readonly<Record<string, unknown>> | undefined
) => {
  if (values === undefined || declared.typed.size === 0) return values
  let typed: Record<string, unknown> | undefined
  for (const name in values) {
    const value = values[name]
    if (typeof value !== "string") continue
    const parameter = declared.typed.get(`${location}:${name}`)
    if (parameter === undefined) continue
    const asDeclared = textAsDeclared(parameter.schema, value)
    if (asDeclared !== value) (typed ??= { ...values })[name] = asDeclared
  }
  return typed ?? values
}

/**
 * Parameters travel as text, and callers (a model's tool call above all) send them as text: `"5"` fits a query,
 * path or header parameter declared as an integer, and a caller's `x-tenant` is the declared `X-Tenant`.
 * `wire` is what is sent (the text as given), `typed` what is validated.
 */
const withDeclaredParameters = (
  operation: ImportedOperation,
  input: InvokeOperation
): { readonly wire: InvokeOperation; readonly typed: object } => {
  if (input.headers === undefined && input.query_params === undefined && input.path_params === undefined) {
    return { wire: input, typed: input }
  }
  const declared = declaredOf(operation)
  const query = typedGroup(declared, "query", input.query_params)
  const path = typedGroup(declared, "path", input.path_params)
  let wire = input
  // what is validated only: header values may be numbers and booleans there
  let typed: object = query === input.query_params && path === input.path_params
    ? input
    : { ...input, query_params: query, path_params: path }
  if (input.headers !== undefined && declared.headers.size > 0) {
    const wireHeaders: Record<string, string> = {}
    const typedHeaders: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(input.headers)) {
      const parameter = declared.headers.get(name.toLowerCase())
      const key = parameter?.name ?? name
      wireHeaders[key] = value
      typedHeaders[key] = parameter === undefined ? value : textAsDeclared(parameter.schema, value)
    }
    wire = { ...input, headers: wireHeaders }
    typed = { ...typed, headers: typedHeaders }
  }
  return { wire, typed }
}

/**
 * Validates the input against the operation's schema and builds the outgoing request, against `baseUrl`
 * when given (Switchyard's own API), else the connection's or connector's server URL, else the operation's own
 * server, else the document's.
 */
export const prepareCall = (
  target: InvokeTarget,
  input: InvokeOperation,
  credentials: AppliedCredentials,
  userToken: string | undefined,
  baseUrl?: string
): Prepared => {
  const { connection, connector, operation } = target
  const { typed, wire } = withDeclaredParameters(operation, input)
  const checked = validatorFor(operation)(typed)
  if (!checked.ok) {
    const first = checked.issues[0]!
    const more = checked.issues.length > 1 ? ` (and ${checked.issues.length - 1} more)` : ""
    return {
      ok: false,
      status: 400,
      code: "validation_failed",
      message: `\`${first.path}\`: ${first.message}${more}`,
      details: { issues: checked.issues }
    }
  }
  const headers = reveal(credentials.headers)
  if (userToken !== undefined && wantsUserToken(target)) headers["authorization"] = `Bearer ${userToken}`
  const built = buildRequest({
    baseUrl: baseUrl ?? connection.server_url ?? connector.server_url ?? defaultServer(operation.servers) ??
      defaultServer(connector.imported.servers),
    operation,
    input: wire,
    credentials: { headers, query: reveal(credentials.query), cookies: reveal(credentials.cookies) }
  })
  if (!built.ok) {
    return {
      ok: false,
      status: built.kind === "connector" ? 422 : 400,
      code: built.code,
      message: built.message,
      ...(built.details === undefined ? {} : { details: built.details })
    }
  }
  return { ok: true, request: built, requestBytes: typeof built.body === "string" ? Buffer.byteLength(built.body) : 0 }
}
