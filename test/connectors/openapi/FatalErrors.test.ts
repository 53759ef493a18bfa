import { describe, expect, it } from "vitest"
import { importOpenApi, OpenApiImportError } from "../../../src/connectors/openapi/OpenApiImport.js"
import { fixtureText, warningsAt } from "./fixtures.js"

const failure = (document: unknown): OpenApiImportError => {
  try {
    importOpenApi(document)
  } catch (error) {
    if (error instanceof OpenApiImportError) return error
    throw error
  }
  throw new Error("expected an OpenApiImportError")
}

const info = { title: "T", version: "1" }

describe("documents that cannot be imported", () => {
  it.each([
    ["an array", [], "An OpenAPI document must be an object, got an array"],
    ["null", null, "An OpenAPI document must be an object, got null"],
    ["a number", 42, "An OpenAPI document must be an object, got number"],
    ["empty text", " \n", "The document is empty: send the OpenAPI document itself"],
    ["plain text", "hello", "An OpenAPI document must be an object, got string"],
    [
      "a URL",
      "https://api.example.com/openapi.json",
      "The document is a URL, which is not fetched: send the OpenAPI document itself " +
      "(e.g. `\"spec\": $(curl -s URL)`, or `switchyard connectors add FILE`)"
    ]
  ])("rejects %s", (_, document, message) => {
    const error = failure(document)
    expect(error.message).toBe(message)
    expect(error.pointer).toBe("")
    expect(error.name).toBe("OpenApiImportError")
    expect(error).toBeInstanceOf(Error)
  })

  it("shows line and column of a YAML syntax error", () => {
    const error = failure(fixtureText("broken-syntax.yaml"))
    expect(error.pointer).toBe("")
    expect(error.message).toBe(
      "The document is neither JSON nor valid YAML at line 9, column 1: All mapping items must start at the same column"
    )
  })

  it("shows where truncated JSON breaks", () => {
    const error = failure("{\n  \"openapi\": \"3.0.0\",\n  \"info\": {\n")
    expect(error.message).toMatch(/^The document is neither JSON nor valid YAML at line \d+, column \d+: /)
  })

  it("names the missing version field", () => {
    const error = failure({ info, paths: {} })
    expect(error.pointer).toBe("/openapi")
    expect(error.message).toBe(
      "Not an OpenAPI document: the \"openapi\" field (or \"swagger\" for Swagger 2.0) is missing"
    )
  })

  it.each([
    [{ openapi: "1.2", info, paths: {} }, "/openapi", "Unsupported OpenAPI version \"1.2\""],
    [{ openapi: "4.0.0", info, paths: {} }, "/openapi", "Unsupported OpenAPI version \"4.0.0\""],
    [{ swagger: "1.2", info, paths: {} }, "/swagger", "Unsupported Swagger version \"1.2\""],
    [{ swaggerVersion: "1.2", apis: [] }, "/swaggerVersion", "Unsupported Swagger version \"1.2\""],
    [
      { openapi: { major: 3 }, info, paths: {} },
      "/openapi",
      "\"openapi\" must be a version string such as \"3.1.0\", got object"
    ]
  ])("rejects unsupported versions (%#)", (document, pointer, message) => {
    const error = failure(document)
    expect(error.pointer).toBe(pointer)
    expect(error.message.startsWith(message)).toBe(true)
  })

  it.each([
    [{ openapi: "3.0.3", info }, "The \"paths\" object is missing"],
    [{ swagger: "2.0", info }, "The \"paths\" object is missing"],
    [{ openapi: "3.1.0", info }, "The \"paths\" object is missing (OpenAPI 3.1 needs paths, webhooks or components)"],
    [{ openapi: "3.0.3", info, paths: [] }, "\"paths\" must be an object, got an array"],
    [{ openapi: "3.1.0", info, paths: "none", webhooks: {} }, "\"paths\" must be an object, got string"]
  ])("rejects missing or malformed paths (%#)", (document, message) => {
    const error = failure(document)
    expect(error.pointer).toBe("/paths")
    expect(error.message).toBe(message)
  })
})

describe("documents that import with warnings", () => {
  it("accepts a document without operations, saying so", () => {
    const empty = importOpenApi({ openapi: "3.0.3", info, servers: [{ url: "https://x.test" }], paths: {} })
    expect(empty.operations).toEqual([])
    expect(empty.report).toEqual({
      imported: 0,
      skipped: [],
      warnings: [{ pointer: "/paths", message: "the document has no importable operations" }]
    })
  })

  it("reads the unquoted YAML versions `openapi: 3.0` and `swagger: 2.0`", () => {
    const oas = importOpenApi("openapi: 3.0\ninfo: {title: T, version: 1.0}\npaths: {}\n")
    expect(oas.specVersion).toBe("3.0")
    expect(oas.version).toBe("1")
    expect(warningsAt(oas, "/openapi")).toEqual(["openapi should be a string; read 3 as \"3\""])
    expect(importOpenApi("swagger: 2.0\ninfo: {title: T, version: '1'}\npaths: {}\n").specVersion).toBe("2.0")
  })

  it("reads YAML anchors and merge keys", () => {
    const merged = importOpenApi([
      "openapi: 3.0.3",
      "info: {title: T, version: '1'}",
      "components:",
      "  schemas:",
      "    Base: &base {type: object, properties: {id: {type: string}}}",
      "    Named:",
      "      <<: *base",
      "      required: [id]",
      "paths:",
      "  /x:",
      "    post:",
      "      operationId: x",
      "      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Named'}}}}",
      "      responses: {'200': {description: ok}}"
    ].join("\n"))
    expect(merged.operations[0]!.body!.schema).toEqual({
      type: "object",
      properties: { id: { type: "string" } },
      required: ["id"]
    })
  })

  it("reads OpenAPI 3.2 as 3.1", () => {
    const next = importOpenApi({ openapi: "3.2.0", info, paths: {} })
    expect(next.specVersion).toBe("3.1")
    expect(warningsAt(next, "/openapi")).toEqual(["OpenAPI 3.2.0 read as 3.1"])
  })

  it("warns about a missing title and missing servers", () => {
    const bare = importOpenApi({ openapi: "3.0.0", paths: {} })
    expect(bare.title).toBe("")
    expect(warningsAt(bare, "/info/title")).toEqual(["the document has no title"])
    expect(warningsAt(bare, "/servers")).toEqual(["no server declared; a base URL must be supplied"])
  })
})
