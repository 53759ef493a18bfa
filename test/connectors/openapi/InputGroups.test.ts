import { describe, expect, it } from "vitest"
import { withEveryGroup } from "../../../src/connectors/openapi/InputSchema.js"
import { importFixture, issuesOf, operation } from "./fixtures.js"

const petstore = importFixture("petstore-oas30.json")
const EMPTY = { type: "object", properties: {}, additionalProperties: false }

/** Issue 19 item 13: spec 2.5's three groups are always in the input schema, and an empty group always fits. */
describe("operation input groups", () => {
  it("always has body_params, query_params and path_params, an absent one as an empty object", () => {
    for (const op of petstore.operations) {
      expect(Object.keys(op.input.properties as object)).toEqual(
        expect.arrayContaining(["body_params", "query_params", "path_params", "headers"])
      )
    }
    const createPet = operation(petstore, "post_pets")
    expect((createPet.input.properties as any).path_params).toEqual(EMPTY)
    const getPet = operation(petstore, "get_pets_petId")
    expect((getPet.input.properties as any).body_params).toEqual(EMPTY)
  })

  it("accepts empty groups with the README's invoke shape, and nothing else in them", () => {
    const createPet = operation(petstore, "post_pets")
    const body = { name: "Rex", petType: "dog" }
    expect(issuesOf(createPet, { body_params: body, query_params: {}, path_params: {}, headers: { "X-Trace": "1" } }))
      .toBe("ok")
    expect(issuesOf(operation(petstore, "get_pets_petId"), { path_params: { petId: 1 }, body_params: {} })).toBe("ok")
    expect(issuesOf(createPet, { body_params: body, query_params: { q: 1 } })).toEqual([
      "query_params.q: is not allowed"
    ])
  })

  it("brings an input schema stored without its empty groups up to the rule, and leaves a complete one as is", () => {
    const getPet = operation(petstore, "get_pets_petId")
    const { body_params: _, query_params: __, ...rest } = getPet.input.properties as Record<string, unknown>
    const stored = { ...getPet.input, properties: rest }
    const upgraded = withEveryGroup(stored)
    expect(upgraded.properties).toMatchObject({
      body_params: EMPTY,
      query_params: EMPTY,
      path_params: rest.path_params
    })
    expect(upgraded.required).toEqual(getPet.input.required)
    expect(withEveryGroup(getPet.input)).toBe(getPet.input)
  })
})
