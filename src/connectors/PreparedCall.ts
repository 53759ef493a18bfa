import { Redacted } from "effect"
import type { AppliedCredentials } from "../../cluster/ConnectionEntity.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import type { ConnectionRow, ConnectorRow } from "./ConnectorRepo.js"
import type { ImportedParameter, JsonSchema } from "./openapi/ImportedConnector.js"
import { validatorFor } from "./openapi/InputValidator.js"
import type { ImportedOperation } from "./openapi/OpenApiImport.js"
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

const headerParameters = new WeakMap<ImportedOperation, ReadonlyMap<string, ImportedParameter>>()
/** The operation's header parameters by lower-case name. */
const declaredHeaders = (operation: ImportedOperation) => {
  let found = headerParameters.get(operation)
  if (found === undefined) {
    found = new Map(operation.parameters.filter((p) => p.in === "header").map((p) => [p.name.toLowerCase(), p]))
    headerParameters.set(operation, found)
  }
  return found
}

const NUMBER = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

/** A header's text as the value its schema describes (`"5"` for an integer is 5), for validation only. */
const typedHeader = (schema: JsonSchema, text: string): unknown => {
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes("string")) return text
  if ((types.includes("integer") || types.includes("number")) && NUMBER.test(text)) return Number(text)
  if (types.includes("boolean") && (text === "true" || text === "false")) return text === "true"
  return text
}

/**
 * Header names are case-insensitive and header values text: a caller's `x-tenant` is the declared `X-Tenant`,
 * and `"5"` fits a header declared as an integer. `wire` is what is sent, `typed` what is validated.
 */
const withDeclaredHeaders = (operation: ImportedOperation, input: InvokeOperation) => {
  const declared = input.headers === undefined ? undefined : declaredHeaders(operation)
  if (declared === undefined || declared.size === 0) return { wire: input, typed: input }
  const wire: Record<string, string> = {}
  const typed: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(input.headers!)) {
    const parameter = declared.get(name.toLowerCase())
    const key = parameter?.name ?? name
    wire[key] = value
    typed[key] = parameter === undefined ? value : typedHeader(parameter.schema, value)
  }
  return { wire: { ...input, headers: wire }, typed: { ...input, headers: typed } }
}

/**
 * Validates the input against the operation's schema and builds the outgoing request, against `baseUrl`
 * when given (Switchyard's own API), else the connection's or connector's server URL.
 */
export const prepareCall = (
  target: InvokeTarget,
  input: InvokeOperation,
  credentials: AppliedCredentials,
  userToken: string | undefined,
  baseUrl?: string
): Prepared => {
  const { connection, connector, operation } = target
  const { typed, wire } = withDeclaredHeaders(operation, input)
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
    baseUrl: baseUrl ?? connection.server_url ?? connector.server_url ?? connector.imported.servers[0],
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
