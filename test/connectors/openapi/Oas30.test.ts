import { describe, expect, it } from "vitest"
import { importOpenApi } from "../../../src/connectors/openapi/OpenApiImport.js"
import { fixtureText, issuesOf, operation } from "./fixtures.js"

// passed as an object, the way a caller that already parsed the document does
const petstore = importOpenApi(JSON.parse(fixtureText("petstore-oas30.json")))

describe("OpenAPI 3.0 petstore", () => {
  it("reads the document's identity, servers and document-level security", () => {
    expect(petstore.specVersion).toBe("3.0")
    expect(petstore.title).toBe("Petstore")
    expect(petstore.description).toBe("Pets, their photos and their owners.")
    expect(petstore.version).toBe("1.4.0")
    expect(petstore.servers).toEqual(["https://api.petstore.test/v1", "/v1"])
    expect(petstore.security).toEqual([{ apiKey: [] }])
  })

  it("lists every operation with a stable id, its operationId and a lower-case method", () => {
    expect(petstore.operations.map((op) => [op.id, op.operationId, op.method, op.path])).toEqual([
      ["get_pets", "listPets", "get", "/pets"],
      ["post_pets", "createPet", "post", "/pets"],
      ["get_pets_petId", "getPetById", "get", "/pets/{petId}"],
      ["put_pets_petId", "replacePet", "put", "/pets/{petId}"],
      ["patch_pets_petId", "updatePet", "patch", "/pets/{petId}"],
      ["delete_pets_petId", "deletePet", "delete", "/pets/{petId}"],
      ["post_pets_petId_photos", "uploadPetPhoto", "post", "/pets/{petId}/photos"]
    ])
    expect(petstore.report).toEqual({
      imported: 7,
      skipped: [],
      warnings: [{
        pointer: "/components/securitySchemes/petstore_auth/flows/implicit",
        message: "oauth2 implicit flow is not supported; ignored"
      }]
    })
  })

  it("derives pretty names from summary, description or the operationId", () => {
    const pretty = (id: string) => {
      const op = operation(petstore, id)
      return [op.pretty_name, op.pretty_description]
    }
    expect(pretty("get_pets")).toEqual(["List all pets", "List all pets"])
    expect(pretty("post_pets")).toEqual(["Create pet", "Adds a pet to the store."])
    expect(pretty("put_pets_petId")).toEqual(["Replace pet", "PUT /pets/{petId}"])
    expect(operation(petstore, "get_pets").tags).toEqual(["pets"])
  })

  it("imports query and header parameters with OAS 3 style defaults", () => {
    const listPets = operation(petstore, "get_pets")
    expect(listPets.parameters).toEqual([
      {
        name: "limit",
        in: "query",
        required: false,
        style: "form",
        explode: true,
        description: "How many pets per page",
        schema: { type: "integer", format: "int32", minimum: 1, maximum: 100, default: 20 }
      },
      {
        name: "status",
        in: "query",
        required: false,
        style: "form",
        explode: false,
        description: "Only pets in these states",
        schema: { type: "array", items: { type: "string", enum: ["available", "pending", "sold"] } }
      },
      {
        name: "X-Request-Id",
        in: "header",
        required: false,
        style: "simple",
        explode: false,
        schema: { type: "string", format: "uuid" }
      }
    ])
    expect(listPets.body).toBeNull()
    expect(listPets.input).toMatchObject({
      type: "object",
      additionalProperties: false,
      required: [],
      properties: {
        query_params: {
          type: "object",
          additionalProperties: false,
          properties: { limit: { description: "How many pets per page" } }
        },
        headers: { properties: { "X-Request-Id": { type: "string" } }, additionalProperties: { type: "string" } }
      }
    })
    expect(Object.keys(listPets.input.properties as object)).toEqual([
      "path_params",
      "query_params",
      "body_params",
      "headers"
    ])
  })

  it("validates listPets input", () => {
    const listPets = operation(petstore, "get_pets")
    expect(issuesOf(listPets, {})).toBe("ok")
    expect(issuesOf(listPets, {
      query_params: { limit: 10, status: ["sold"] },
      headers: { "X-Request-Id": "7f0c1c52-4b52-4b8e-9a44-3c4a3f1d2e10", "X-Other": "free-form" }
    })).toBe("ok")
    expect(issuesOf(listPets, { query_params: { limit: 0, status: ["lost"], page: 2 } })).toEqual([
      "query_params.page: is not allowed",
      "query_params.limit: must be >= 1",
      "query_params.status.0: must be one of \"available\", \"pending\", \"sold\""
    ])
  })

  it("follows a chain of parameter $refs and the schema $ref behind it, shared by the path item", () => {
    const getPet = operation(petstore, "get_pets_petId")
    expect(getPet.parameters).toEqual([{
      name: "petId",
      in: "path",
      required: true,
      style: "simple",
      explode: false,
      description: "The pet's id",
      // exclusiveMinimum: true + minimum: 0 (OAS 3.0) is the 2020-12 exclusiveMinimum: 0; `example` is dropped
      schema: { type: "integer", format: "int64", exclusiveMinimum: 0 }
    }])
    expect(getPet.input.required).toEqual(["path_params"])
    expect(getPet.input.properties).toMatchObject({
      path_params: { required: ["petId"], additionalProperties: false }
    })
    expect(issuesOf(getPet, { path_params: { petId: 7 } })).toBe("ok")
    expect(issuesOf(getPet, { path_params: { petId: 0 } })).toEqual(["path_params.petId: must be > 0"])
    expect(issuesOf(getPet, {})).toEqual(["path_params: is required"])
  })

  it("takes the JSON body of a $ref'd request body and converts 3.0 schema idioms", () => {
    const createPet = operation(petstore, "post_pets")
    expect(createPet.body?.contentType).toBe("application/json")
    expect(createPet.body?.required).toBe(true)
    const schema = createPet.body!.schema as any
    expect(schema.description).toBe("The pet to add")
    expect(schema.required).toEqual(["name", "petType"])
    expect(schema.properties.tag).toEqual({ type: ["string", "null"], description: "Free-form label" })
    expect(schema.properties.status.description).toBe("Where the pet is in the sale")
    expect(schema.properties.weightKg).toEqual({ type: "number", exclusiveMinimum: 0, maximum: 200 })
    expect(schema.properties.owner.anyOf[1]).toEqual({ type: "null" })
    const text = JSON.stringify(schema)
    for (const dropped of ["discriminator", "xml", "externalDocs", "example", "nullable"]) {
      expect(text).not.toContain(`"${dropped}"`)
    }
    expect(createPet.input.properties).toMatchObject({ body_params: schema })
    expect(createPet.input.required).toEqual(["body_params"])
  })

  it("validates createPet input", () => {
    const createPet = operation(petstore, "post_pets")
    expect(issuesOf(createPet, { body_params: { name: "Rex", petType: "dog", tag: null, owner: null } })).toBe("ok")
    expect(issuesOf(createPet, { body_params: { name: "Rex", petType: "dog", owner: { name: "Ann" } } })).toBe("ok")
    const issues = issuesOf(createPet, { body_params: { name: "", weightKg: 0, owner: {} } })
    expect(issues).toContain("body_params.petType: is required")
    expect(issues).toContain("body_params.name: must NOT have fewer than 1 characters")
    expect(issues).toContain("body_params.weightKg: must be > 0")
    expect(issues).toContain("body_params.owner.name: is required")
    expect(issuesOf(createPet, {})).toEqual(["body_params: is required"])
  })

  it("does not require readOnly properties in request bodies", () => {
    const replacePet = operation(petstore, "put_pets_petId")
    const second = (replacePet.body!.schema.allOf as Array<any>)[1]
    expect(second.required).toBeUndefined()
    expect(second.properties.id.readOnly).toBe(true)
    expect(issuesOf(replacePet, { path_params: { petId: 1 }, body_params: { name: "Rex", petType: "cat" } })).toBe("ok")
  })

  it("prefers any +json media type over XML", () => {
    const updatePet = operation(petstore, "patch_pets_petId")
    expect(updatePet.body?.contentType).toBe("application/merge-patch+json")
    expect(issuesOf(updatePet, { path_params: { petId: 1 }, body_params: { status: "sold" } })).toBe("ok")
    expect(issuesOf(updatePet, { path_params: { petId: 1 }, body_params: {} })).toEqual([
      "body_params: must NOT have fewer than 1 properties"
    ])
    expect(issuesOf(updatePet, { path_params: { petId: 1 }, body_params: { colour: "red" } })).toEqual([
      "body_params.colour: is not allowed"
    ])
  })

  it("describes a multipart body by the object schema of its fields", () => {
    const upload = operation(petstore, "post_pets_petId_photos")
    expect(upload.body).toEqual({
      contentType: "multipart/form-data",
      required: true,
      schema: {
        type: "object",
        required: ["file"],
        properties: { file: { type: "string", format: "binary" }, caption: { type: "string", maxLength: 140 } }
      }
    })
  })

  it("keeps operation security apart from the document's: null inherits, [] means none", () => {
    expect(operation(petstore, "post_pets").security).toEqual([{ petstore_auth: ["write:pets"] }])
    expect(operation(petstore, "get_pets").security).toBeNull()
    expect(operation(petstore, "delete_pets_petId").security).toEqual([])
    expect(petstore.securitySchemes).toEqual({
      apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
      petstore_auth: {
        type: "oauth2",
        flows: {
          authorizationCode: {
            authorizationUrl: "https://auth.petstore.test/authorize",
            tokenUrl: "https://auth.petstore.test/token",
            scopes: { "read:pets": "Read pets", "write:pets": "Change pets" }
          }
        }
      }
    })
  })

  it("imports the same from JSON text as from the parsed object", () => {
    expect(importOpenApi(fixtureText("petstore-oas30.json"))).toEqual(petstore)
  })
})
