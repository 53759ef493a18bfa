import * as Yaml from "yaml"
import { describe, isObject, type JsonObject, type SpecVersion } from "./ImportContext.js"
import { OpenApiImportError } from "./OpenApiImportError.js"

const parseText = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    // not JSON: YAML (which also reads most almost-JSON)
  }
  // merge keys (`<<: *base`) are YAML 1.1, and hand-written documents share schemas with them
  const document = Yaml.parseDocument(text, { prettyErrors: true, merge: true })
  const error = document.errors[0]
  if (error !== undefined) {
    const position = error.linePos?.[0]
    const where = position === undefined ? "" : ` at line ${position.line}, column ${position.col}`
    const reason = (error.message.split("\n")[0] ?? "").replace(/ at line \d+, column \d+:?$/, "")
    throw new OpenApiImportError(`The document is neither JSON nor valid YAML${where}: ${reason}`, "")
  }
  try {
    return document.toJS({ maxAliasCount: 100 })
  } catch (cause) {
    throw new OpenApiImportError(`The YAML document cannot be read: ${(cause as Error).message}`, "")
  }
}

/** The document as an object: a string is parsed as JSON, else as YAML. */
export const readDocument = (input: unknown): JsonObject => {
  if (typeof input === "string" && input.trim() === "") {
    throw new OpenApiImportError("The document is empty: send the OpenAPI document itself", "")
  }
  // as other gateways take a document's address; this one is sent the document
  if (typeof input === "string" && /^https?:\/\/\S+$/i.test(input.trim())) {
    throw new OpenApiImportError(
      "The document is a URL, which is not fetched: send the OpenAPI document itself " +
        "(e.g. `\"spec\": $(curl -s URL)`, or `switchyard connectors add FILE`)",
      ""
    )
  }
  const value = typeof input === "string" ? parseText(input) : input
  if (!isObject(value)) {
    throw new OpenApiImportError(`An OpenAPI document must be an object, got ${describe(value)}`, "")
  }
  return value
}

export interface DetectedVersion {
  readonly version: SpecVersion
  readonly notes: ReadonlyArray<{ readonly pointer: string; readonly message: string }>
}

const SUPPORTED = "supported: Swagger 2.0, OpenAPI 3.0.x and 3.1.x"

/** Reads `openapi` / `swagger`; YAML turns an unquoted `openapi: 3.0` into the number 3, which is accepted. */
export const detectVersion = (document: JsonObject): DetectedVersion => {
  const { openapi, swagger } = document
  if (openapi === undefined && swagger === undefined) {
    if (document.swaggerVersion !== undefined) {
      throw new OpenApiImportError(
        `Unsupported Swagger version ${JSON.stringify(document.swaggerVersion)} (${SUPPORTED})`,
        "/swaggerVersion"
      )
    }
    throw new OpenApiImportError(
      "Not an OpenAPI document: the \"openapi\" field (or \"swagger\" for Swagger 2.0) is missing",
      "/openapi"
    )
  }
  if (openapi !== undefined) {
    const notes = swagger === undefined
      ? []
      : [{ pointer: "/swagger", message: "both openapi and swagger; swagger ignored" }]
    if (typeof openapi !== "string" && typeof openapi !== "number") {
      throw new OpenApiImportError(
        `"openapi" must be a version string such as "3.1.0", got ${describe(openapi)}`,
        "/openapi"
      )
    }
    const text = String(openapi)
    if (typeof openapi === "number") {
      notes.push({ pointer: "/openapi", message: `openapi should be a string; read ${openapi} as "${text}"` })
    }
    if (/^3(\.0(\.\d+)?)?(-[\w.]+)?$/.test(text)) return { version: "3.0", notes }
    if (/^3\.1(\.\d+)?(-[\w.]+)?$/.test(text)) return { version: "3.1", notes }
    if (/^3\.2(\.\d+)?$/.test(text)) {
      return { version: "3.1", notes: [...notes, { pointer: "/openapi", message: `OpenAPI ${text} read as 3.1` }] }
    }
    throw new OpenApiImportError(`Unsupported OpenAPI version "${text}" (${SUPPORTED})`, "/openapi")
  }
  if (swagger === "2.0" || swagger === 2) return { version: "2.0", notes: [] }
  throw new OpenApiImportError(`Unsupported Swagger version ${JSON.stringify(swagger)} (${SUPPORTED})`, "/swagger")
}
