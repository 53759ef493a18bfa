import { describe, expect, it } from "vitest"
import { importOpenApi } from "../../../src/connectors/openapi/OpenApiImport.js"
import { HTTP_METHODS } from "../../../src/connectors/openapi/Operations.js"
import { FIXTURES, fixtureText, importFixture, referenceAjv } from "./fixtures.js"

describe.each(FIXTURES)("corpus: %s", (name) => {
  const connector = importFixture(name)

  it("gives every operation an Ajv 2020-compilable input, body and parameter schema", () => {
    const ajv = referenceAjv()
    for (const op of connector.operations) {
      expect(() => ajv.compile(op.input), op.id).not.toThrow()
      if (op.body !== null) expect(() => ajv.compile(op.body!.schema), op.id).not.toThrow()
      for (const parameter of op.parameters) expect(() => ajv.compile(parameter.schema), op.id).not.toThrow()
    }
  })

  it("gives every input the invoke shape of spec 2.5", () => {
    for (const op of connector.operations) {
      const properties = op.input.properties as Record<string, unknown>
      expect(op.input.type).toBe("object")
      expect(op.input.additionalProperties).toBe(false)
      expect(
        Object.keys(properties).every((group) =>
          ["path_params", "query_params", "body_params", "headers"].includes(group)
        )
      ).toBe(true)
      expect(properties.headers).toMatchObject({ type: "object", additionalProperties: { type: "string" } })
      // all three groups, always (issue 19 item 13); an absent kind of argument is an empty group
      const empty = { type: "object", properties: {}, additionalProperties: false }
      for (const group of ["path_params", "query_params", "body_params"]) expect(group in properties).toBe(true)
      if (!op.parameters.some((p) => p.in === "path")) expect(properties.path_params).toEqual(empty)
      if (!op.parameters.some((p) => p.in === "query")) expect(properties.query_params).toEqual(empty)
      if (op.body === null) expect(properties.body_params).toEqual(empty)
    }
  })

  it("produces unique URL-safe ids, unique operationIds and lower-case methods", () => {
    const ids = connector.operations.map((op) => op.id)
    const operationIds = connector.operations.map((op) => op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    expect(new Set(operationIds).size).toBe(operationIds.length)
    for (const op of connector.operations) {
      expect(op.id).toMatch(/^[A-Za-z0-9_-]+$/)
      expect(HTTP_METHODS).toContain(op.method)
    }
    expect(connector.report.imported).toBe(connector.operations.length)
  })

  it("is plain JSON and deterministic", () => {
    expect(JSON.parse(JSON.stringify(connector))).toEqual(connector)
    expect(importOpenApi(fixtureText(name))).toEqual(connector)
  })

  it("reports with JSON pointers", () => {
    for (const entry of [...connector.report.warnings, ...connector.report.skipped]) {
      expect(entry.pointer).toMatch(/^(\/([^~]|~[01])*)*$/)
    }
  })
})
