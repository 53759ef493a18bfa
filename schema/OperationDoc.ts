import { type HttpApi, OpenApi } from "@effect/platform"
import { Context, Option } from "effect"
import { type Role, roleDisplayName } from "./Identity.js"
import type { Permission } from "./Policy.js"

/**
 * What the OpenAPI document says of one endpoint beyond its schemas: a summary, who may call it and the
 * error codes of its own. `documentApi` (schema/OpenApiDocument.ts) turns it into the operation's
 * `summary`, its role note and `x-switchyard-role`, and the `code` enum of each error response.
 */
export interface OperationDoc {
  /** A few words, imperative, no final period: "Create an agent". */
  readonly summary: string
  /**
   * What calling it takes: an entry of the policy table (schema/Policy.ts) the server enforces
   * (`requirePermission`), whose role the document shows. `null`: no API key (the probes).
   */
  readonly permission: Permission | null
  /** The rest of the rule when the role is not all of it: owners, personal keys, keys limited to agents. */
  readonly access?: string
  /**
   * Error codes this operation answers besides the ones every operation of its kind does (`commonCodes` in
   * schema/OpenApiDocument.ts: authentication, validation, body limits, `not_found` with a path id,
   * `forbidden` above Member, 500/503); each must be in the catalogue (schema/Errors.ts `ErrorCodes`). Empty
   * when the handler answers none of its own: the codes it can fail with, traced, never a status's every code.
   */
  readonly errors: ReadonlyArray<string>
}

export class OperationDocs extends Context.Tag("switchyard/OpenApi/OperationDoc")<OperationDocs, OperationDoc>() {}

/** `.annotateContext(operation({...}))` on an endpoint: its summary, permission and error codes. */
export const operation = (doc: OperationDoc) =>
  Context.make(OperationDocs, doc).pipe(Context.add(OpenApi.Summary, doc.summary))

/** The weakest role that may call an operation with this doc; `null` when it takes no API key. */
export const roleOf = (doc: OperationDoc): Role | null => doc.permission?.role ?? null

/** Who may call an operation of this `role`, in words: "Builder and above", "any member", "no API key". */
export const whoMay = (role: Role | null) =>
  role === null ? "no API key" : role === "member" ? "any member" : `${roleDisplayName[role]} and above`

/** The doc of the endpoint named `operationId` in `api`, for texts outside the document (the CLI's help). */
export const operationDocOf = (api: HttpApi.HttpApi.Any, operationId: string): OperationDoc | undefined => {
  for (const group of Object.values((api as unknown as HttpApi.HttpApi.AnyWithProps).groups)) {
    const endpoint = group.endpoints[operationId]
    if (endpoint !== undefined) return Option.getOrUndefined(Context.getOption(endpoint.annotations, OperationDocs))
  }
  return undefined
}
