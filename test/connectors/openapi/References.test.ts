import { describe, expect, it } from "vitest"
import { importOpenApi } from "../../../src/connectors/openapi/OpenApiImport.js"
import { importFixture, issuesOf, operation, referenceAjv, warningsAt } from "./fixtures.js"

const refs = importFixture("refs-broken.json")
const widgetBody = "/paths/~1widgets/post/requestBody/content/application~1json/schema/properties"

describe("$ref resolution", () => {
  it("replaces external and dangling schema refs by {} with a warning at the ref", () => {
    const create = operation(refs, "post_widgets")
    const properties = (create.body!.schema as any).properties
    expect(properties.spec).toEqual({})
    expect(properties.owner).toEqual({})
    expect(properties.colour).toEqual({})
    expect(properties.size).toEqual({ type: "string", enum: ["S", "M", "L"] })
    expect(warningsAt(refs, `${widgetBody}/spec/$ref`)).toEqual([
      "unresolved $ref \"widget-spec.yaml#/WidgetSpec\": external references are not fetched; replaced by {}"
    ])
    expect(warningsAt(refs, `${widgetBody}/owner/$ref`)).toEqual([
      "unresolved $ref \"https://schemas.example.com/owner.json\": external references are not fetched; replaced by {}"
    ])
    expect(warningsAt(refs, `${widgetBody}/colour/$ref`)).toEqual([
      "unresolved $ref \"#/components/schemas/Colour\": nothing at that location in the document; replaced by {}"
    ])
    expect(issuesOf(create, { body_params: { size: "M", spec: { anything: 1 }, colour: "teal" } })).toBe("ok")
    expect(issuesOf(create, { body_params: { size: "XL" } })).toEqual([
      "body_params.size: must be one of \"S\", \"M\", \"L\""
    ])
  })

  it("cuts a cycle of bare refs to {} and keeps the result compilable", () => {
    const create = operation(refs, "post_widgets")
    expect(warningsAt(refs, "/components/schemas/LoopB")).toEqual([
      "circular $ref to /components/schemas/LoopA that never descends into a property or item; replaced by {}"
    ])
    expect((create.body!.schema as any).properties.loop).toEqual({})
    expect(create.input.$defs).toBeUndefined()
    expect(issuesOf(create, { body_params: { size: "S", loop: [1, 2] } })).toBe("ok")
  })

  it("cuts a cycle through allOf / anyOf that would make a validator loop forever", () => {
    const connector = importOpenApi({
      openapi: "3.0.0",
      info: { title: "Loops", version: "1" },
      paths: {
        "/a": {
          post: { requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/A" } } } } }
        }
      },
      components: {
        schemas: {
          A: { allOf: [{ $ref: "#/components/schemas/B" }, { type: "object", properties: { a: { type: "string" } } }] },
          B: {
            anyOf: [{ $ref: "#/components/schemas/A" }, { type: "object" }],
            properties: { kids: { type: "array", items: { $ref: "#/components/schemas/A" } } }
          }
        }
      }
    })
    const post = operation(connector, "post_a")
    expect(warningsAt(connector, "/components/schemas/B")).toEqual([
      "circular $ref to /components/schemas/A that never descends into a property or item; replaced by {}"
    ])
    // the cycle through items (a real tree) stays
    expect(JSON.stringify(post.input)).toContain("\"items\":{\"$ref\":\"#/$defs/A\"}")
    expect(issuesOf(post, { body_params: { a: "x", kids: [{ a: "y", kids: [] }] } })).toBe("ok")
    expect(issuesOf(post, { body_params: { a: "x", kids: [{ a: 1 }] } })).toEqual([
      "body_params.kids.0.a: must be string"
    ])
  })

  it("drops keyword values Ajv would reject, with a warning each", () => {
    const legacy = (operation(refs, "post_widgets").body!.schema as any).properties.legacy
    expect(legacy).toEqual({ properties: { code: { type: "string" } } })
    expect(refs.report.warnings.filter((w) => w.pointer.startsWith("/components/schemas/Legacy/"))).toEqual([
      { pointer: "/components/schemas/Legacy/type", message: "invalid type \"any\" ignored" },
      {
        pointer: "/components/schemas/Legacy/pattern",
        message: "invalid pattern \"[unclosed\" ignored (not an ECMAScript regular expression)"
      },
      {
        pointer: "/components/schemas/Legacy/minLength",
        message: "invalid minLength (a non-negative integer, got -1) ignored"
      },
      { pointer: "/components/schemas/Legacy/maximum", message: "invalid maximum (a number, got \"10\") ignored" },
      {
        pointer: "/components/schemas/Legacy/required",
        message: "invalid required (an array of property names, got boolean) ignored"
      }
    ])
  })

  it("drops a parameter behind an external ref and keeps the operation", () => {
    const get = operation(refs, "get_widgets_widgetId")
    expect(get.parameters.map((p) => p.name)).toEqual(["widgetId"])
    expect(warningsAt(refs, "/paths/~1widgets~1{widgetId}/get/parameters/1/$ref")).toEqual([
      "unresolved $ref \"common.yaml#/parameters/Trace\": external references are not fetched"
    ])
  })

  it("skips an operation whose path parameter is behind a dangling ref, and a path item behind an external one", () => {
    expect(refs.report.skipped).toEqual([
      {
        method: "put",
        path: "/widgets/{widgetId}",
        pointer: "/paths/~1widgets~1{widgetId}/put",
        reason: "path parameter \"widgetId\" in the path template has no definition"
      },
      {
        method: "*",
        path: "/gadgets",
        pointer: "/paths/~1gadgets",
        reason: "unresolved $ref \"other.yaml#/paths/~1gadgets\""
      }
    ])
    expect(warningsAt(refs, "/paths/~1widgets~1{widgetId}/put/parameters/0/$ref")).toEqual([
      "unresolved $ref \"#/components/parameters/Missing\": nothing at that location in the document"
    ])
  })

  it("keeps an operation whose request body is behind an external ref as any JSON", () => {
    const gizmo = operation(refs, "post_gizmos")
    expect(gizmo.body).toEqual({ contentType: "application/json", required: false, schema: {} })
    expect(warningsAt(refs, "/paths/~1gizmos/post/requestBody/$ref")).toEqual([
      "unresolved $ref \"bodies.yaml#/Gizmo\": external references are not fetched"
    ])
  })

  it("does not follow anchor refs", () => {
    expect(operation(refs, "get_sprockets").parameters[0]?.schema).toEqual({})
    expect(warningsAt(refs, "/components/schemas/Filter/$ref")).toEqual([
      "unresolved $ref \"#filter\": anchor references are not supported; replaced by {}"
    ])
  })

  it("follows a path item $ref to another path; the copy gets a suffixed operationId", () => {
    const cogs = operation(refs, "get_cogs")
    expect(cogs.path).toBe("/cogs")
    expect(cogs.operationId).toBe("listSprockets_2")
    expect(warningsAt(refs, "/paths/~1cogs/get/operationId")).toEqual([
      "duplicate operationId \"listSprockets\" (already used by GET /sprockets); renamed to \"listSprockets_2\""
    ])
  })

  it("survives a document object that contains itself (an already dereferenced document)", () => {
    const node: Record<string, unknown> = { type: "object", properties: { name: { type: "string" } } }
    ;(node.properties as Record<string, unknown>).children = { type: "array", items: node }
    const connector = importOpenApi({
      openapi: "3.0.0",
      info: { title: "Cyclic", version: "1" },
      paths: {
        "/nodes": {
          post: { operationId: "createNode", requestBody: { content: { "application/json": { schema: node } } } }
        }
      }
    })
    const create = operation(connector, "post_nodes")
    expect(() => JSON.stringify(create.input)).not.toThrow()
    expect((create.body!.schema as any).properties.children.items).toEqual({})
    expect(connector.report.warnings.map((w) => w.message)).toContain(
      "schema contains itself (circular object); replaced by {}"
    )
    expect(referenceAjv().validateSchema(create.input)).toBe(true)
  })

  it("cuts absurdly deep inline nesting", () => {
    let schema: Record<string, unknown> = { type: "string" }
    for (let i = 0; i < 200; i++) schema = { type: "array", items: schema }
    const connector = importOpenApi({
      openapi: "3.0.0",
      info: { title: "Deep", version: "1" },
      paths: { "/deep": { post: { requestBody: { content: { "application/json": { schema } } } } } }
    })
    expect(connector.report.warnings.some((w) => w.message === "schema nested deeper than 64 levels; replaced by {}"))
      .toBe(true)
    expect(() => referenceAjv().compile(operation(connector, "post_deep").input)).not.toThrow()
  })
})
