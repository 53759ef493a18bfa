import addFormatsModule from "ajv-formats"
import type { ErrorObject } from "ajv/dist/2020.js"
import { Ajv2020 } from "ajv/dist/2020.js"
import type { ImportedOperation } from "./ImportedConnector.js"

export interface InputIssue {
  /** Dot path into the invoke input, e.g. "body_params.name" or "path_params.petId"; "" for the input itself. */
  readonly path: string
  readonly message: string
}

export type InputCheck = { readonly ok: true } | { readonly ok: false; readonly issues: Array<InputIssue> }

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the whole module
const addFormats = addFormatsModule.default

const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 }

const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false })
addFormats(ajv)
// OpenAPI's own formats, so they validate instead of being unknown
ajv.addFormat("int32", {
  type: "number",
  validate: (n: number) => Number.isInteger(n) && n >= INT32.min && n <= INT32.max
})
ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isInteger(n) })
ajv.addFormat("float", { type: "number", validate: () => true })
ajv.addFormat("double", { type: "number", validate: () => true })
ajv.addFormat("byte", /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/)
ajv.addFormat("binary", true)
ajv.addFormat("password", true)

const decode = (segment: string) => segment.replace(/~1/g, "/").replace(/~0/g, "~")

const join = (path: string, name: string) => path === "" ? name : `${path}.${name}`

const TOP_LEVEL_HINT = "is not allowed; send target arguments in path_params, query_params, body_params or headers"

const issueOf = (error: ErrorObject): InputIssue => {
  const path = error.instancePath.split("/").slice(1).map(decode).join(".")
  const params = error.params as Record<string, unknown>
  switch (error.keyword) {
    case "required":
      return { path: join(path, String(params.missingProperty)), message: "is required" }
    case "additionalProperties":
      return {
        path: join(path, String(params.additionalProperty)),
        message: path === "" ? TOP_LEVEL_HINT : "is not allowed"
      }
    case "type": {
      const types = Array.isArray(params.type) ? params.type : String(params.type).split(",")
      return { path, message: `must be ${types.join(" or ")}` }
    }
    case "enum":
      return {
        path,
        message: `must be one of ${(params.allowedValues as Array<unknown>).map((v) => JSON.stringify(v)).join(", ")}`
      }
    default:
      return { path, message: error.message ?? `fails ${error.keyword}` }
  }
}

export type InputValidator = (value: unknown) => InputCheck

const cache = new WeakMap<object, InputValidator>()

export const compile = (schema: object): InputValidator => {
  const validate = ajv.compile(schema)
  // Ajv keeps every compiled schema in a cache of its own; the WeakMap below is the one that should own it
  ajv.removeSchema(schema)
  return (value) => {
    if (validate(value)) return { ok: true }
    const seen = new Set<string>()
    const issues = (validate.errors ?? []).map(issueOf).filter((issue) => {
      const key = `${issue.path}\u0000${issue.message}`
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
    return { ok: false, issues }
  }
}

/** The validator of the invoke input of `operation`, compiled once per input schema object. */
export const validatorFor = (operation: ImportedOperation): InputValidator => {
  let validator = cache.get(operation.input)
  if (validator === undefined) {
    validator = compile(operation.input)
    cache.set(operation.input, validator)
  }
  return validator
}
