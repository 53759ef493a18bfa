import { describe, expect, it } from "vitest"
import { importOpenApi } from "../../../src/connectors/openapi/OpenApiImport.js"
import { importFixture, issuesOf, operation, referenceAjv, warningsAt } from "./fixtures.js"

const library = importFixture("library-oas31.yaml")

const category = (name: string, children: Array<unknown> = []) => ({ name, children })

describe("OpenAPI 3.1 library (YAML)", () => {
  it("reads the document and substitutes server variables with their defaults", () => {
    expect(library.specVersion).toBe("3.1")
    expect(library.title).toBe("Library catalog")
    expect(library.description).toBe("The catalog of a small lending library.\n")
    expect(library.servers).toEqual(["https://library.example.com/api/v2"])
    expect(library.securitySchemes).toEqual({ bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } })
    expect(library.operations.map((op) => `${op.id} ${op.operationId}`)).toEqual([
      "get_categories listCategories",
      "post_categories createCategory",
      "post_books addBook",
      "get_books_isbn getBook",
      "put_books_isbn replaceBook",
      "post_threads startThread"
    ])
  })

  it("does not import webhooks, and says so", () => {
    expect(library.operations.some((op) => op.path.includes("bookReturned"))).toBe(false)
    expect(library.report.skipped).toEqual([])
    expect(library.report.warnings).toEqual([
      { pointer: "/webhooks", message: "1 webhook(s) not imported: a connector only calls the API" }
    ])
  })

  it("keeps 3.1 type arrays", () => {
    const list = operation(library, "get_categories")
    expect(list.parameters[0]?.schema).toEqual({ type: ["string", "null"] })
    expect(issuesOf(list, { query_params: { parent: null } })).toBe("ok")
    expect(issuesOf(list, { query_params: { parent: "Fiction" } })).toBe("ok")
    expect(issuesOf(list, { query_params: { parent: 3 } })).toEqual(["query_params.parent: must be string or null"])
  })

  it("keeps a recursive schema finite through $defs, at the root of input and of the body schema", () => {
    const create = operation(library, "post_categories")
    expect(create.input.properties).toMatchObject({ body_params: { $ref: "#/$defs/Category" } })
    const defs = create.input.$defs as any
    expect(Object.keys(defs)).toEqual(["Category"])
    expect(defs.Category.properties.children).toEqual({ type: "array", items: { $ref: "#/$defs/Category" } })
    // `#/$defs/Shelf` inside the component resolves against the component's own $defs
    expect(defs.Category.properties.shelf).toEqual({
      type: "object",
      required: ["code"],
      properties: { code: { type: "string", pattern: "^[A-Z]{2}-\\d+$" } }
    })
    expect(create.body?.schema).toEqual({ $ref: "#/$defs/Category", $defs: defs })
    expect(JSON.parse(JSON.stringify(create.input))).toEqual(create.input)
    expect(referenceAjv().compile(create.body!.schema)(category("Root", [category("Child")]))).toBe(true)
  })

  it("validates a recursive body at any depth", () => {
    const create = operation(library, "post_categories")
    const tree = category("Fiction", [category("Crime", [category("Nordic")]), category("Fantasy")])
    expect(issuesOf(create, { body_params: tree })).toBe("ok")
    expect(issuesOf(create, { body_params: category("Fiction", [category("Crime", [{ children: [] }])]) })).toEqual([
      "body_params.children.0.children.0.name: is required"
    ])
    expect(issuesOf(create, { body_params: { name: "A", shelf: { code: "nope" } } })).toEqual([
      "body_params.shelf.code: must match pattern \"^[A-Z]{2}-\\d+$\""
    ])
  })

  it("handles mutually recursive schemas", () => {
    const start = operation(library, "post_threads")
    // both sides of the cycle stay as definitions
    expect(Object.keys(start.input.$defs as object)).toEqual(["Comment", "Thread"])
    expect(start.input.properties).toMatchObject({ body_params: { $ref: "#/$defs/Thread" } })
    expect((start.input.$defs as any).Comment.properties.replies).toEqual({ $ref: "#/$defs/Thread" })
    const thread = {
      title: "Best of 2024",
      comments: [{ text: "Hi", replies: { title: "re", comments: [{ text: "Yo" }] } }]
    }
    expect(issuesOf(start, { body_params: thread })).toBe("ok")
    const broken = { title: "t", comments: [{ text: "Hi", replies: { title: "re", comments: [{}] } }] }
    expect(issuesOf(start, { body_params: broken })).toEqual([
      "body_params.comments.0.replies.comments.0.text: is required"
    ])
  })

  it("applies 3.1 $ref siblings and keeps examples and numeric exclusiveMinimum", () => {
    const add = operation(library, "post_books")
    const schema = add.body!.schema as any
    expect(add.body?.required).toBe(false)
    expect(add.input.required).toEqual([])
    expect(schema.description).toBe("The book to add")
    expect(schema.examples).toEqual([{ isbn: "9780000000002", title: "An example" }])
    expect(schema.properties.rating).toEqual({ type: "number", exclusiveMinimum: 0, maximum: 5 })
    // a ref into a component's $defs
    expect(schema.properties.category.required).toEqual(["code"])
    expect(issuesOf(add, {})).toBe("ok")
    expect(issuesOf(add, { body_params: { isbn: "1", title: "T", subtitle: null, authors: [{ name: "A" }] } }))
      .toBe("ok")
    expect(issuesOf(add, { body_params: { isbn: "1", title: "T", authors: [], rating: 0 } })).toEqual([
      "body_params.authors: must NOT have fewer than 1 items",
      "body_params.rating: must be > 0"
    ])
  })

  it("follows a path item $ref into components.pathItems", () => {
    const get = operation(library, "get_books_isbn")
    const put = operation(library, "put_books_isbn")
    expect(get.path).toBe("/books/{isbn}")
    expect(get.pretty_name).toBe("Get a book")
    expect(get.parameters.map((p) => p.name)).toEqual(["isbn"])
    expect(put.body?.required).toBe(true)
    expect(issuesOf(get, { path_params: { isbn: "9780306406157" } })).toBe("ok")
    expect(issuesOf(get, { path_params: { isbn: "978-0306406157" } })).toEqual([
      "path_params.isbn: must match pattern \"^(97[89])?\\d{9}[\\dX]$\""
    ])
  })

  it("accepts a 3.1 document with webhooks and no paths as zero operations", () => {
    const hooks = importOpenApi({
      openapi: "3.1.0",
      info: { title: "Hooks only", version: "1" },
      servers: [{ url: "https://hooks.example.com" }],
      webhooks: { ping: { post: { responses: { "200": { description: "ok" } } } } }
    })
    expect(hooks.operations).toEqual([])
    expect(hooks.report.imported).toBe(0)
    expect(warningsAt(hooks, "/paths")).toEqual(["the document has no importable operations"])
  })
})
