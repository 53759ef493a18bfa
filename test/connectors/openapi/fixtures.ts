import addFormatsModule from "ajv-formats"
import { Ajv2020 } from "ajv/dist/2020.js"
import * as Fs from "node:fs"
import { fileURLToPath } from "node:url"
import { validatorFor } from "../../../src/connectors/openapi/InputValidator.js"
import {
  type ImportedConnector,
  type ImportedOperation,
  importOpenApi
} from "../../../src/connectors/openapi/OpenApiImport.js"

const directory = fileURLToPath(new URL("./fixtures/", import.meta.url))

export const FIXTURES = [
  "petstore-oas30.json",
  "library-oas31.yaml",
  "shop-swagger2.json",
  "operation-ids.yaml",
  "refs-broken.json",
  "security-multi.yaml",
  "params-styles.yaml"
] as const

export const fixtureText = (name: string): string => Fs.readFileSync(directory + name, "utf8")

export const importFixture = (name: string): ImportedConnector => importOpenApi(fixtureText(name))

export const operation = (connector: ImportedConnector, id: string): ImportedOperation => {
  const found = connector.operations.find((candidate) => candidate.id === id)
  if (found === undefined) {
    throw new Error(`no operation ${id}; have ${connector.operations.map((o) => o.id).join(", ")}`)
  }
  return found
}

/** The messages of the warnings recorded at exactly `pointer`. */
export const warningsAt = (connector: ImportedConnector, pointer: string): Array<string> =>
  connector.report.warnings.filter((warning) => warning.pointer === pointer).map((warning) => warning.message)

/** The Ajv set-up the importer promises compatibility with (logger off: unknown formats such as int32 only log). */
export const referenceAjv = () => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, logger: false })
  addFormatsModule.default(ajv)
  return ajv
}

/** Paths of the issues validatorFor reports, or "ok". */
export const issuesOf = (op: ImportedOperation, input: unknown): "ok" | Array<string> => {
  const result = validatorFor(op)(input)
  return result.ok ? "ok" : result.issues.map((issue) => `${issue.path}: ${issue.message}`)
}
