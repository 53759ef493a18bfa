import { Redacted } from "effect"
import type { AppliedCredentials } from "../../cluster/ConnectionEntity.js"
import type { InvokeOperation } from "../../schema/Connectors.js"
import type { ConnectionRow, ConnectorRow } from "./ConnectorRepo.js"
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
  const checked = validatorFor(operation)(input)
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
    input,
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
