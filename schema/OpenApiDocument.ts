import { HttpApi, OpenApi, OpenApiJsonSchema } from "@effect/platform"
import { Context, Option } from "effect"
import packageJson from "../package.json" with { type: "json" }
import { ErrorDetails } from "./ErrorDetails.js"
import { type ErrorCodeEntry, ErrorCodes } from "./Errors.js"
import { documentEvents } from "./EventsApi.js"
import type { Role } from "./Identity.js"
import { type OperationDoc, OperationDocs, roleOf, whoMay } from "./OperationDoc.js"
import { operationExamples } from "./OperationExamples.js"
import { ThreadEventDoc } from "./ThreadEvents.js"
import { documentWebhooks } from "./WebhooksApi.js"

/**
 * The one transform from what `OpenApi.fromApi` derives to the document we serve at /openapi.json and commit
 * as openapi.json (`npm run openapi`): camelCase operationIds, a summary and the role on every operation,
 * each error response as the one envelope with the operation's own `code` enum, typed `details`, thread
 * events and event/webhook schemas, examples, the package's version and a server. Rules for new endpoints:
 * docs/guides/clients.md ("Documenting an endpoint").
 */
export const documentApi = (api: HttpApi.HttpApi.Any) => (spec: Record<string, any>): Record<string, any> => {
  const endpoints = endpointsOf(api)
  documentEvents(spec)
  documentWebhooks(spec)
  for (const [type, item] of Object.entries<Record<string, any>>(spec.webhooks ?? {})) {
    // `task.completed` -> `onTaskCompleted`: what a receiver's handler for it is called in generated code
    item.post.operationId = `on${type.split(/[._]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("")}`
  }
  const schemas: Record<string, any> = spec.components.schemas
  OpenApiJsonSchema.makeWithDefs(ErrorDetails, { defs: schemas })
  documentThreadEvents(schemas)
  for (const [path, methods] of Object.entries<Record<string, any>>(spec.paths)) {
    for (const [method, op] of Object.entries<Record<string, any>>(methods)) {
      const endpoint = endpoints.get(`${method} ${path}`)
      if (endpoint === undefined) continue
      const operationId = endpoint.identifier
      op.operationId = operationId
      const doc = endpoint.doc
      op.summary ??= doc?.summary ?? words(operationId)
      if (doc !== undefined) {
        op.description = [op.description, roleNote(doc)].filter((s) => s !== undefined).join("\n\n")
        op["x-switchyard-role"] = roleOf(doc) ?? "none"
      }
      optionalBody(op)
      nameBodies(op, operationId, schemas)
      documentErrors(op, operationId, doc, schemas)
      const example = operationExamples[operationId]
      if (example?.request !== undefined) op.requestBody.content["application/json"].example = example.request
      if (example?.response !== undefined) {
        op.responses[example.response.status].content["application/json"].example = example.response.value
      }
    }
  }
  // HttpApi's own decode error (never sent: the pipeline answers `validation_failed`) and what only it used
  for (const internal of ["HttpApiDecodeError", "Issue", "PropertyKey", "ErrorBody"]) {
    const rest = { ...spec, components: { ...spec.components, schemas: { ...schemas, [internal]: undefined } } }
    if (internal === "HttpApiDecodeError" || !JSON.stringify(rest).includes(`"#/components/schemas/${internal}"`)) {
      delete schemas[internal]
    }
  }
  inlineBuiltins(spec, schemas)
  cleanSchemas(spec.paths)
  cleanSchemas(spec.webhooks)
  cleanSchemas(schemas)
  for (const [name, schema] of Object.entries(schemas)) schema.title = name
  spec.info = {
    ...spec.info,
    version: packageJson.version,
    license: { name: "Apache-2.0", identifier: "Apache-2.0" }
  }
  spec.servers = [{
    url: "http://localhost:8080",
    description: "A node on this machine (`switchyard serve`); use your deployment's `SWITCHYARD_PUBLIC_URL`."
  }]
  return spec
}

/**
 * A payload that may be null (`Schema.NullOr`) is a body the client may leave out, which HttpApi reads as
 * null: documented as the body's own schema, not required.
 */
const optionalBody = (op: Record<string, any>) => {
  const body = op.requestBody?.content?.["application/json"]
  const alternatives: unknown = body?.schema?.anyOf
  if (!Array.isArray(alternatives) || alternatives.length !== 2) return
  const value = alternatives.find((a) => a?.type !== "null")
  if (value === undefined || alternatives.every((a) => a?.type !== "null")) return
  body.schema = value
  op.requestBody.required = false
}

interface EndpointInfo {
  readonly identifier: string
  readonly doc: OperationDoc | undefined
}

/** Each endpoint by `method path` as the document writes them, with its id and its `operation(...)` doc. */
const endpointsOf = (api: HttpApi.HttpApi.Any) => {
  const endpoints = new Map<string, EndpointInfo>()
  HttpApi.reflect(api as HttpApi.HttpApi.AnyWithProps, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      const path = endpoint.path.replace(/:(\w+)\??/g, "{$1}")
      endpoints.set(`${endpoint.method.toLowerCase()} ${path}`, {
        identifier: Option.getOrElse(Context.getOption(endpoint.annotations, OpenApi.Identifier), () => endpoint.name),
        doc: Option.getOrUndefined(Context.getOption(endpoint.annotations, OperationDocs))
      })
    }
  })
  return endpoints
}

const words = (operationId: string) => {
  const text = operationId.replace(/([A-Z])/g, " $1").toLowerCase()
  return text.charAt(0).toUpperCase() + text.slice(1)
}

/**
 * A request body given inline (the upload's multipart form, written by hand) becomes a component named after
 * its operation (`UploadFileForm`), as every schema HttpApi derives is: generators name types after
 * components, and Python's refuses some unnamed ones.
 */
const nameBodies = (op: Record<string, any>, operationId: string, schemas: Record<string, any>) => {
  for (const [mediaType, content] of Object.entries<Record<string, any>>(op.requestBody?.content ?? {})) {
    if (content.schema?.type !== "object") continue
    const name = `${operationId.charAt(0).toUpperCase()}${operationId.slice(1)}${
      mediaType === "multipart/form-data" ? "Form" : "Body"
    }`
    schemas[name] = content.schema
    content.schema = { $ref: `#/components/schemas/${name}` }
  }
}

const ROLE_ORDER: ReadonlyArray<Role> = ["member", "builder", "admin", "super_admin"]

const roleNote = (doc: OperationDoc) => {
  const role = roleOf(doc)
  const who = role === null
    ? "none: no API key needed."
    : role === "member"
    ? "any member's key (Member and above)."
    : `${whoMay(role)} (${ROLE_ORDER.slice(ROLE_ORDER.indexOf(role)).map((r) => `\`${r}\``).join(", ")}).`
  return `**Role:** ${who}${doc.access === undefined ? "" : ` ${doc.access}`}`
}

const codeEntries = new Map<string, ErrorCodeEntry>()
for (const entry of ErrorCodes) {
  if (entry.surface === "rest" && !codeEntries.has(entry.code)) codeEntries.set(entry.code, entry)
}

/**
 * The codes every operation of its kind can answer: the request pipeline's (bad text; a body that is not
 * JSON, broken or too large, which it checks on every request that sends one, GETs included), validation,
 * authentication's, `not_found` for a path id, `forbidden` above Member, and the 500/503 of a defect, a
 * stopping node or a database gone.
 */
export const commonCodes = (op: Record<string, any>, doc: OperationDoc | undefined): Array<string> => {
  const codes = ["invalid_text", "invalid_json", "payload_too_large", "unsupported_media_type"]
  codes.push("internal_error", "unavailable")
  const parameters: Array<Record<string, any>> = op.parameters ?? []
  const json = op.requestBody?.content?.["application/json"] !== undefined
  if (parameters.length > 0 || json) codes.push("validation_failed")
  if (parameters.some((p) => p.in === "path")) codes.push("not_found")
  if ((op.security ?? []).length > 0) {
    codes.push(
      "missing_api_key",
      "malformed_api_key",
      "invalid_api_key",
      "revoked_api_key",
      "bearer_not_supported",
      "rate_limited",
      "database_unavailable",
      "database_conflict"
    )
  }
  const role = doc === undefined ? null : roleOf(doc)
  if (role !== null && role !== "member") codes.push("forbidden")
  return codes
}

const REASONS: Record<number, string> = {
  400: "Bad request",
  401: "Unauthenticated",
  402: "Payment required",
  403: "Forbidden",
  404: "Not found",
  409: "Conflict",
  410: "Gone",
  413: "Payload too large",
  415: "Unsupported media type",
  416: "Range not satisfiable",
  422: "Unprocessable",
  429: "Too many requests",
  500: "Internal error",
  502: "Bad gateway",
  503: "Unavailable",
  504: "Gateway timeout"
}

/**
 * Replaces the error responses HttpApi derived (the groups' classes, the internal decode error) with the
 * codes the operation answers: one named schema per operation (`<OperationId>Error`), the envelope with
 * `code` as its enum, under each status its codes are sent with: the common codes and the operation's own
 * `errors`, never every catalogue code of a status (generated clients take the enum as what can come).
 */
const documentErrors = (
  op: Record<string, any>,
  operationId: string,
  doc: OperationDoc | undefined,
  schemas: Record<string, any>
) => {
  const declared = Object.keys(op.responses).map(Number).filter((status) => status >= 400)
  const codes = [...new Set([...commonCodes(op, doc), ...(doc?.errors ?? [])])]
  for (const status of declared) delete op.responses[status]
  const name = `${operationId.charAt(0).toUpperCase()}${operationId.slice(1)}Error`
  schemas[name] = errorSchema(operationId, codes)
  const byStatus = new Map<number, Array<string>>()
  for (const code of codes) {
    // a code missing from the catalogue goes under `default` (test/openapi/Document.test.ts fails on it);
    // never a throw here, which would stop the node from serving
    const status = codeEntries.get(code)?.status ?? 0
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  for (const status of [...byStatus.keys()].sort()) {
    const list = byStatus.get(status)!.map((c) => `\`${c}\``).join(", ")
    op.responses[status === 0 ? "default" : status] = {
      description: `${REASONS[status] ?? "Error"}: ${list}.`,
      ...(status === 429 || status === 503 ? { headers: { "Retry-After": RETRY_AFTER } } : {}),
      content: { "application/json": { schema: { $ref: `#/components/schemas/${name}` } } }
    }
  }
}

const RETRY_AFTER = {
  description:
    "Seconds to wait before retrying (sent with `rate_limited`, `database_unavailable` and `database_conflict`).",
  schema: { type: "integer" }
}

// a function, not an inline object: test/docs/SentErrorCodes.ts reads `code: { … }` literals as codes sent
const codeProperty = (codes: ReadonlyArray<string>) => ({
  type: "string",
  enum: [...codes].sort(),
  description: "Stable machine-readable error code."
})

const errorSchema = (operationId: string, codes: ReadonlyArray<string>) => ({
  type: "object",
  description: `An error of \`${operationId}\`: the one error envelope, its \`code\` one of this operation's ` +
    "(docs/reference/errors.md).",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: codeProperty(codes),
        message: { type: "string", description: "What went wrong and what to do about it." },
        request_id: { type: "string", description: "The request's `x-request-id`." },
        details: { $ref: "#/components/schemas/ErrorDetails" }
      },
      additionalProperties: false
    }
  },
  additionalProperties: false
})

/** `ThreadEvent` as the union its `type` tells apart, each with its `data` (schema/ThreadEvents.ts). */
const documentThreadEvents = (schemas: Record<string, any>) => {
  const union = OpenApiJsonSchema.makeWithDefs(ThreadEventDoc, { defs: schemas }) as Record<string, any>
  const variants: Array<{ $ref: string }> = union.anyOf
  const mapping: Record<string, string> = {}
  for (const variant of variants) {
    const schema = schemas[variant.$ref.split("/").pop()!]
    const type = schema.properties.type
    for (const value of type.enum ?? [type.const]) mapping[value] = variant.$ref
  }
  schemas.ThreadEvent = {
    description: union.description,
    oneOf: variants,
    discriminator: { propertyName: "type", mapping }
  }
}

/**
 * Internal names out: Effect's refinement titles (`maxLength(128)`, `int`) and `$id`s (`/schemas/unknown`,
 * repeated wherever `unknown` is) on inline schemas; every component is titled by its name instead.
 */
/**
 * Effect's own refinements that reach the document as components under Effect's names and words (`Int`
 * "an integer", `Trim` "a string that will be trimmed"): written in place instead, what each one is on the
 * wire, the keywords beside the reference (a range, a description) kept over it, and Effect's words dropped.
 */
const builtins: Record<string, Record<string, unknown>> = {
  Int: { type: "integer" },
  NonNegative: { type: "number", minimum: 0 },
  Trim: { type: "string" },
  UUID: { type: "string", format: "uuid" },
  Date: {
    type: "string",
    description: "An ISO 8601 date, or date and time: `2026-11-01`, `2026-11-01T09:30:00Z`."
  }
}

const effectWords =
  /^an? (string|number|integer|array|non-negative number|positive number|negative number|Universally Unique)\b/

const inlineBuiltins = (spec: Record<string, any>, schemas: Record<string, any>) => {
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit)
    if (typeof node !== "object" || node === null) return node
    const record = node as Record<string, unknown>
    const name = typeof record.$ref === "string" ? record.$ref.split("/").pop()! : undefined
    const { $ref: _ref, ...siblings } = record
    const base = name !== undefined && name in builtins ? builtins[name] : undefined
    const out: Record<string, unknown> = base === undefined ? { ...record } : { ...base, ...siblings }
    // Effect's words for a refinement ("a string at most 200 character(s) long") say what the keywords say
    if (typeof out.description === "string" && effectWords.test(out.description)) delete out.description
    for (const [key, value] of Object.entries(out)) out[key] = visit(value)
    return out
  }
  for (const name of Object.keys(builtins)) delete schemas[name]
  for (const key of ["paths", "webhooks"] as const) if (spec[key] !== undefined) spec[key] = visit(spec[key])
  for (const [name, schema] of Object.entries(schemas)) schemas[name] = visit(schema)
}

const cleanSchemas = (node: unknown): void => {
  if (Array.isArray(node)) {
    for (const item of node) cleanSchemas(item)
    return
  }
  if (typeof node !== "object" || node === null) return
  const record = node as Record<string, unknown>
  if (typeof record.$id === "string") delete record.$id
  if (typeof record.title === "string") delete record.title
  for (const value of Object.values(record)) cleanSchemas(value)
}
