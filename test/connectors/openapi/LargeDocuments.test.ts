import { describe, expect, it } from "vitest"
import { importOpenApi } from "../../../src/connectors/openapi/OpenApiImport.js"
import { issuesOf, operation, referenceAjv, warningsAt } from "./fixtures.js"

const documentWith = (schemas: Record<string, unknown>, bodyRef: string) =>
  importOpenApi({
    openapi: "3.0.0",
    info: { title: "Large", version: "1" },
    servers: [{ url: "https://large.example.com" }],
    paths: {
      "/things": {
        post: {
          operationId: "createThing",
          requestBody: { content: { "application/json": { schema: { $ref: `#/components/schemas/${bodyRef}` } } } }
        }
      }
    },
    components: { schemas }
  })

/** C0 → C1 → … → C(n-1), each with a `next` property; `closed` links the last back to C0. */
const chain = (n: number, closed: boolean) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => {
    const next = i + 1 < n ? `C${i + 1}` : closed ? "C0" : undefined
    const properties: Record<string, unknown> = { name: { type: "string" } }
    if (next !== undefined) properties.next = { $ref: `#/components/schemas/${next}` }
    return [`C${i}`, { type: "object", required: ["name"], properties }]
  }))

const nested = (depth: number): Record<string, unknown> =>
  depth === 0 ? { name: "leaf" } : { name: `level ${depth}`, next: nested(depth - 1) }

describe("large and deeply linked documents", () => {
  it("keeps a large component in $defs instead of inlining it at every use", () => {
    const properties = Object.fromEntries(
      Array.from({ length: 250 }, (_, i) => [`field${i}`, { type: "string", description: `Field ${i}` }])
    )
    const connector = importOpenApi({
      openapi: "3.0.0",
      info: { title: "Big", version: "1" },
      paths: {
        "/big": {
          post: { requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Big" } } } } },
          put: { requestBody: { content: { "application/json": { schema: { $ref: "#/components/schemas/Big" } } } } }
        }
      },
      components: { schemas: { Big: { type: "object", properties } } }
    })
    for (const id of ["post_big", "put_big"]) {
      const op = operation(connector, id)
      expect(op.input.properties).toMatchObject({ body_params: { $ref: "#/$defs/Big" } })
      expect(Object.keys((op.input.$defs as any).Big.properties)).toHaveLength(250)
      expect(issuesOf(op, { body_params: { field7: 7 } })).toEqual(["body_params.field7: must be string"])
    }
  })

  it("imports a long chain of refs without exhausting the stack, inlining what stays small", () => {
    const connector = documentWith(chain(2000, false), "C0")
    const create = operation(connector, "post_things")
    expect(() => JSON.stringify(create.input)).not.toThrow()
    expect(() => referenceAjv().compile(create.input)).not.toThrow()
    expect(issuesOf(create, { body_params: nested(20) })).toBe("ok")
    expect(issuesOf(create, { body_params: { name: "a", next: { next: {} } } })).toEqual([
      "body_params.next.name: is required",
      "body_params.next.next.name: is required"
    ])
  })

  it("keeps a long cycle exact while a validator can still compile it", () => {
    const connector = documentWith(chain(40, true), "C0")
    const create = operation(connector, "post_things")
    expect(Object.keys(create.input.$defs as object)).toHaveLength(40)
    expect(warningsAt(connector, "/paths/~1things/post")).toEqual([])
    expect(issuesOf(create, { body_params: nested(100) })).toBe("ok")
    const broken = nested(45) as any
    broken.next.next.next.next.next.next.next.next.next.next.name = 1
    expect(issuesOf(create, { body_params: broken })).toEqual([
      `body_params.${"next.".repeat(10)}name: must be string`
    ])
  })

  it("cuts a cycle too long for a validator to compile, with a warning", () => {
    const connector = documentWith(chain(500, true), "C0")
    const create = operation(connector, "post_things")
    expect(warningsAt(connector, "/paths/~1things/post")).toEqual([
      "schemas recurse too deeply for a validator; deep and circular references were replaced by {}"
    ])
    expect(Object.keys(create.input.$defs as object).length).toBeLessThanOrEqual(100)
    expect(() => referenceAjv().compile(create.input)).not.toThrow()
    expect(() => referenceAjv().compile(create.body!.schema)).not.toThrow()
    expect(issuesOf(create, { body_params: nested(5) })).toBe("ok")
    expect(issuesOf(create, { body_params: { next: { name: 2 } } })).toEqual([
      "body_params.name: is required",
      "body_params.next.name: must be string"
    ])
  })

  it("imports a densely interlinked document in bounded size", () => {
    let seed = 7
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647
    const schemas: Record<string, unknown> = {}
    for (let i = 0; i < 150; i++) {
      const properties: Record<string, unknown> = {}
      for (let j = 0; j < 8; j++) {
        properties[`p${j}`] = random() < 0.5
          ? { $ref: `#/components/schemas/S${Math.floor(random() * 150)}` }
          : { type: "string" }
      }
      schemas[`S${i}`] = { type: "object", properties }
    }
    const connector = documentWith(schemas, "S0")
    const create = operation(connector, "post_things")
    expect(JSON.stringify(create).length).toBeLessThan(200_000)
    expect(() => referenceAjv().compile(create.input)).not.toThrow()
    const s0 = (schemas.S0 as any).properties as Record<string, { type?: string }>
    const text = Object.keys(s0).find((name) => s0[name]!.type === "string")!
    expect(issuesOf(create, { body_params: { [text]: "x" } })).toBe("ok")
    expect(issuesOf(create, { body_params: { [text]: 1 } })).toEqual([`body_params.${text}: must be string`])
  })
})
