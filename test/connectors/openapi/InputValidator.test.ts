import { describe, expect, it } from "vitest"
import { validatorFor } from "../../../src/connectors/openapi/InputValidator.js"
import type { ImportedOperation } from "../../../src/connectors/openapi/OpenApiImport.js"
import { importFixture, operation } from "./fixtures.js"

const petstore = importFixture("petstore-oas30.json")

const handMade = (input: ImportedOperation["input"]): ImportedOperation => ({
  id: "post_things",
  operationId: "createThing",
  method: "post",
  path: "/things",
  pretty_name: "Create thing",
  pretty_description: "POST /things",
  tags: [],
  parameters: [],
  body: null,
  security: null,
  input
})

describe("validatorFor", () => {
  it("accepts a valid input", () => {
    expect(validatorFor(operation(petstore, "get_pets_petId"))({ path_params: { petId: 3 } })).toEqual({ ok: true })
  })

  it("compiles once per input schema", () => {
    const op = operation(petstore, "get_pets_petId")
    expect(validatorFor(op)).toBe(validatorFor(op))
    expect(validatorFor({ ...op })).toBe(validatorFor(op))
    expect(validatorFor(operation(petstore, "get_pets"))).not.toBe(validatorFor(op))
  })

  it("reports dot paths into the input with readable messages", () => {
    const createPet = operation(petstore, "post_pets")
    const result = validatorFor(createPet)({
      body_params: { name: 7, petType: "fish", tag: 1, owner: { email: "not-an-email" } },
      extra: true
    })
    expect(result.ok).toBe(false)
    if (result.ok) return
    expect(result.issues).toEqual(expect.arrayContaining([
      {
        path: "extra",
        message: "is not allowed; send target arguments in path_params, query_params, body_params or headers"
      },
      { path: "body_params.name", message: "must be string" },
      { path: "body_params.petType", message: "must be one of \"dog\", \"cat\", \"bird\"" },
      { path: "body_params.tag", message: "must be string or null" },
      { path: "body_params.owner.name", message: "is required" },
      { path: "body_params.owner.email", message: "must match format \"email\"" }
    ]))
    const paths = result.issues.map((issue) => `${issue.path}: ${issue.message}`)
    expect(new Set(paths).size).toBe(paths.length)
  })

  it("reports a non-object input at the root", () => {
    const result = validatorFor(operation(petstore, "get_pets"))([1, 2])
    expect(result).toEqual({ ok: false, issues: [{ path: "", message: "must be object" }] })
  })

  it("validates OpenAPI formats (int32, byte) and escapes pointer segments in paths", () => {
    const op = handMade({
      type: "object",
      additionalProperties: false,
      properties: {
        body_params: {
          type: "object",
          properties: {
            "a/b": { type: "integer", format: "int32" },
            data: { type: "string", format: "byte" },
            secret: { type: "string", format: "password" }
          }
        }
      }
    })
    const validate = validatorFor(op)
    expect(validate({ body_params: { "a/b": 2147483647, data: "aGk=", secret: "x" } })).toEqual({ ok: true })
    expect(validate({ body_params: { "a/b": 2147483648, data: "%%" } })).toEqual({
      ok: false,
      issues: [
        { path: "body_params.a/b", message: "must match format \"int32\"" },
        { path: "body_params.data", message: "must match format \"byte\"" }
      ]
    })
  })
})
