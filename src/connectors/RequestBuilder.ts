import { randomBytes } from "node:crypto"
import type { InvokeOperation } from "../../schema/Connectors.js"
import { VERSION } from "../support/Version.js"
import type { ImportedOperation } from "./openapi/OpenApiImport.js"

export interface OutgoingRequest {
  readonly ok: true
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

export type BuildResult =
  | OutgoingRequest
  | {
    readonly ok: false
    readonly kind: "caller" | "connector"
    readonly code: string
    readonly message: string
    readonly details?: unknown
  }

// never taken from the caller: they describe the connection, not the message
const RESERVED = new Set([
  "host",
  "content-length",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "te",
  "upgrade",
  "trailer",
  "proxy-authorization",
  "proxy-authenticate"
])

const scalar = (value: unknown) =>
  typeof value === "string"
    ? value
    : typeof value === "object" && value !== null
    ? JSON.stringify(value)
    : String(value)

/** Percent-decodes until nothing changes (bounded), so `%252e` is judged as the `.` it may become. */
const fullyDecoded = (text: string) => {
  let current = text
  for (let i = 0; i < 4; i++) {
    let next: string
    try {
      next = decodeURIComponent(current)
    } catch {
      return current
    }
    if (next === current) return current
    current = next
  }
  return current
}

/**
 * A path parameter that is a dot segment (`.`, `..`, or an encoding of one such as `%2e%2E`) would move
 * the call up the target's path, out of the connection's base path: refused, not encoded. Everything else
 * is percent-encoded whole, `/` included, so one value is always one segment.
 */
const isDotSegment = (value: string) => {
  const decoded = fullyDecoded(value)
  return decoded === "." || decoded === ".."
}

/**
 * A path parameter in OpenAPI's `simple` style: an array's items (an object's keys and values, or `key=value`
 * pairs when exploded) joined by commas, each percent-encoded; `text` is the same unencoded, for the checks
 * (and the query value of an object in `form` style, not exploded, which joins it the same way).
 */
const simpleStyle = (value: unknown, explode: boolean): { readonly text: string; readonly encoded: string } => {
  // most are one value: no list to build
  if (typeof value !== "object" || value === null) {
    const text = scalar(value)
    return { text, encoded: encodeURIComponent(text) }
  }
  const parts: Array<string> = Array.isArray(value)
    ? value.map(scalar)
    : Object.entries(value).flatMap(([k, v]) => explode ? [`${k}=${scalar(v)}`] : [k, scalar(v)])
  return { text: parts.join(","), encoded: parts.map(encodeURIComponent).join(",") }
}

const isEmptyObject = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0

/** The base path of a server URL without its trailing slash: "" for the root. */
const basePathOf = (url: URL) => url.pathname.replace(/\/+$/, "")

/** deepObject, to any depth: `name[key]=v`, `name[key][0]=v` (the bracket form qs, Rails and Stripe read). */
const appendDeep = (params: URLSearchParams, name: string, value: unknown) => {
  if (value === undefined || value === null) return
  if (Array.isArray(value)) value.forEach((item, index) => appendDeep(params, `${name}[${index}]`, item))
  else if (typeof value === "object") {
    for (const [k, v] of Object.entries(value)) appendDeep(params, `${name}[${k}]`, v)
  } else params.append(name, scalar(value))
}

/** A query parameter, or a field of a urlencoded body, in its OpenAPI style. */
const appendQuery = (params: URLSearchParams, name: string, value: unknown, style: string, explode: boolean) => {
  if (value === undefined || value === null) return
  if (style === "deepObject" && typeof value === "object") {
    appendDeep(params, name, value)
  } else if (Array.isArray(value)) {
    const sep = style === "spaceDelimited"
      ? " "
      : style === "pipeDelimited"
      ? "|"
      : style === "tabDelimited"
      ? "\t"
      : ","
    if (explode && style === "form") value.forEach((v) => params.append(name, scalar(v)))
    else params.append(name, value.map(scalar).join(sep))
  } else if (typeof value === "object" && explode && style === "form") {
    for (const [k, v] of Object.entries(value)) params.append(k, scalar(v))
  } else if (typeof value === "object" && style === "form") {
    // not exploded: `name=k1,v1,k2,v2`, as OpenAPI's form style writes an object
    params.append(name, simpleStyle(value, false).text)
  } else {
    params.append(name, scalar(value))
  }
}

type Body = NonNullable<ImportedOperation["body"]>

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A urlencoded body: each field as a query parameter of its `encoding` (default: form, exploded). */
const formBody = (body: Body, value: Record<string, unknown>) => {
  const params = new URLSearchParams()
  for (const [name, field] of Object.entries(value)) {
    const encoding = body.encoding?.[name]
    appendQuery(params, name, field, encoding?.style ?? "form", encoding?.explode ?? true)
  }
  return params.toString()
}

/** The schema a body's `$ref` at its root stands for (a large or recursive one is kept in `$defs`). */
const rootOf = (schema: Record<string, unknown>): Record<string, unknown> => {
  const ref = schema.$ref
  const defs = schema.$defs
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/") || !isRecord(defs)) return schema
  const target = defs[ref.slice("#/$defs/".length)]
  return isRecord(target) ? target : schema
}

/** A field whose schema is bytes (`format: binary`, Swagger's `file`, 3.1 `contentMediaType`), or a list of them. */
const isFile = (schema: unknown): boolean =>
  isRecord(schema) &&
  (schema.format === "binary" ||
    (typeof schema.contentMediaType === "string" && schema.contentEncoding === undefined) ||
    (schema.type === "array" && isFile(schema.items)))

// RFC 7578 4.2 by way of the HTML form encoder: quotes and line breaks in a name are percent-encoded
const quoted = (text: string) => `"${text.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A")}"`

/**
 * A multipart body, written out (one string: its size is known, and a retry can send it again). An array is
 * one part per item (or one text part, joined, when its `encoding` is not exploded), an object a JSON part,
 * and a field whose schema is bytes a file part named after the field; `null` is left out.
 */
const multipartBody = (body: Body, value: Record<string, unknown>) => {
  const boundary = `----switchyard-${randomBytes(12).toString("hex")}`
  const properties = rootOf(body.schema).properties
  const parts: Array<string> = []
  const part = (name: string, item: unknown, file: boolean, declared: string | undefined) => {
    if (item === undefined || item === null) return
    const json = typeof item === "object"
    const type = declared?.replace(/[\r\n]/g, "") ??
      (json ? "application/json" : file ? "application/octet-stream" : undefined)
    parts.push(
      `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(name)}` +
        (file ? `; filename=${quoted(name)}` : "") + "\r\n" +
        (type === undefined ? "" : `Content-Type: ${type}\r\n`) +
        `\r\n${json ? JSON.stringify(item) : scalar(item)}\r\n`
    )
  }
  for (const [name, field] of Object.entries(value)) {
    const encoding = body.encoding?.[name]
    const file = isFile(isRecord(properties) ? properties[name] : undefined)
    const declared = encoding?.contentType
    if (!Array.isArray(field) || (declared !== undefined && /json/i.test(declared))) part(name, field, file, declared)
    else if (encoding !== undefined && !encoding.explode) part(name, field.map(scalar).join(","), file, declared)
    else for (const item of field) part(name, item, file, declared)
  }
  return {
    text: parts.join("") + `--${boundary}--\r\n`,
    contentType: `multipart/form-data; boundary=${boundary}`,
    boundary: true
  }
}

const baseType = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase()

interface EncodedBody {
  readonly text: string
  readonly contentType: string
  readonly boundary?: boolean
}

const encodeBody = (body: Body, value: unknown): EncodedBody => {
  const type = baseType(body.contentType)
  if (type === "multipart/form-data" && isRecord(value)) return multipartBody(body, value)
  if (type === "application/x-www-form-urlencoded" && isRecord(value)) {
    return { text: formBody(body, value), contentType: body.contentType }
  }
  const text = typeof value === "string" && !/json/.test(type) ? value : JSON.stringify(value)
  return { text, contentType: body.contentType }
}

/** The outgoing HTTP request for an operation: the spec's method, its path filled in, credentials applied. */
export const buildRequest = (args: {
  readonly baseUrl: string | undefined
  readonly operation: ImportedOperation
  readonly input: InvokeOperation
  readonly credentials: {
    headers: Record<string, string>
    query: Record<string, string>
    cookies: Record<string, string>
  }
}): BuildResult => {
  const { credentials, input, operation } = args
  if (args.baseUrl === undefined || !/^https?:\/\//i.test(args.baseUrl)) {
    return {
      ok: false,
      kind: "connector",
      code: "connector_has_no_server_url",
      message: args.baseUrl === undefined || args.baseUrl === "" || /^[a-z][a-z0-9+.-]*:/i.test(args.baseUrl)
        ? "This connector has no absolute server URL: set `server_url` on the connector or the connection."
        // a relative server (Swagger's Petstore: `/api/v3`) is not appended to a server_url: say what is needed
        : `This connector's server URL \`${args.baseUrl}\` is relative: set \`server_url\` on the connector or ` +
          `the connection to the whole base URL, e.g. \`https://api.example.com${
            args.baseUrl.startsWith("/") ? "" : "/"
          }${args.baseUrl}\`.`
    }
  }
  const pathParams = input.path_params ?? {}
  const segments = new Map<string, ReturnType<typeof simpleStyle>>()
  const dotted: Array<string> = []
  for (const name in pathParams) {
    const value = pathParams[name]
    // `explode` only changes how an object is written
    const explode = typeof value === "object" && value !== null && !Array.isArray(value) &&
      (operation.parameters.find((p) => p.in === "path" && p.name === name)?.explode ?? false)
    const segment = simpleStyle(value, explode)
    segments.set(name, segment)
    if (value !== undefined && value !== null && isDotSegment(segment.text)) dotted.push(name)
  }
  if (dotted.length > 0) {
    const issues = dotted.map((name) => ({
      path: `path_params.${name}`,
      message: "must not be a dot segment (`.` or `..`, encoded or not)"
    }))
    return {
      ok: false,
      kind: "caller",
      code: "validation_failed",
      message: `\`${issues[0]!.path}\`: ${issues[0]!.message}` +
        (issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""),
      details: { issues }
    }
  }
  const path = operation.path.replace(
    /\{([^}]+)\}/g,
    (_, name: string) => (segments.get(name) ?? simpleStyle(undefined, false)).encoded
  )
  const url = new URL(args.baseUrl.replace(/\/+$/, "") + path)
  // the last word: whatever the document's path template holds, a call stays under the server URL's path
  const base = basePathOf(new URL(args.baseUrl))
  if (base !== "" && url.pathname !== base && !url.pathname.startsWith(base + "/")) {
    return {
      ok: false,
      kind: "connector",
      code: "path_outside_server_url",
      message: `${operation.operationId}'s path leads outside the server URL's base path \`${base}\`.`
    }
  }
  const query = input.query_params ?? {}
  for (const [name, value] of Object.entries(query)) {
    if (name in credentials.query) {
      return {
        ok: false,
        kind: "caller",
        code: "parameter_not_allowed",
        message: `\`query_params.${name}\` is set by the connection's credentials.`
      }
    }
    const declared = operation.parameters.find((p) => p.in === "query" && p.name === name)
    appendQuery(url.searchParams, name, value, declared?.style ?? "form", declared?.explode ?? true)
  }
  for (const [name, value] of Object.entries(credentials.query)) url.searchParams.set(name, value)

  const headers: Record<string, string> = { "user-agent": `Switchyard/${VERSION}` }
  for (const [rawName, value] of Object.entries(input.headers ?? {})) {
    const name = rawName.toLowerCase()
    if (RESERVED.has(name) || name in credentials.headers) {
      return {
        ok: false,
        kind: "caller",
        code: "header_not_allowed",
        message: `The header \`${rawName}\` cannot be set: ${
          name in credentials.headers ? "the connection's credentials set it" : "it belongs to the connection"
        }.`
      }
    }
    headers[name] = value
  }
  Object.assign(headers, credentials.headers)
  // the caller's cookies (the operation's cookie parameters) go along with the credentials' own, never over them
  const cookies = Object.entries(credentials.cookies).map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
  if (cookies.length > 0) {
    const given = headers["cookie"]
    const taken = given?.split(";").map((pair) => pair.split("=")[0]!.trim()).find((k) =>
      Object.hasOwn(credentials.cookies, k)
    )
    if (taken !== undefined) {
      return {
        ok: false,
        kind: "caller",
        code: "header_not_allowed",
        message: `The cookie \`${taken}\` cannot be set: the connection's credentials set it.`
      }
    }
    headers["cookie"] = [...(given === undefined || given.trim() === "" ? [] : [given]), ...cookies].join("; ")
  }

  let body: string | undefined
  // spec 2.5: an empty group is always accepted, also where the operation takes no body
  const emptyBody = operation.body === null && isEmptyObject(input.body_params)
  if (input.body_params !== undefined && !emptyBody) {
    if (operation.body === null) {
      return {
        ok: false,
        kind: "caller",
        code: "body_not_accepted",
        message: `${operation.operationId} takes no \`body_params\`.`
      }
    }
    const encoded = encodeBody(operation.body, input.body_params)
    body = encoded.text
    // a multipart boundary is ours to name
    if (encoded.boundary) headers["content-type"] = encoded.contentType
    else headers["content-type"] ??= encoded.contentType
  }
  return { ok: true, method: operation.method, url: url.toString(), headers, body }
}
