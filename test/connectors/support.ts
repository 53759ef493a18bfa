import type { TestNode } from "../support/TestNode.js"

/** A small, realistic document for a target API: path/query/header params, JSON body, API key auth. */
export const petstore = (
  serverUrl: string,
  security: Record<string, unknown> = { apiKey: { type: "apiKey", in: "header", name: "X-Api-Key" } }
) => ({
  openapi: "3.0.3",
  info: { title: "Pet Store", version: "1.0", description: "Pets for tests." },
  servers: [{ url: serverUrl }],
  security: Object.keys(security).map((name) => ({ [name]: [] })),
  components: {
    securitySchemes: security,
    schemas: {
      NewPet: {
        type: "object",
        required: ["name"],
        properties: { name: { type: "string", minLength: 1 }, tag: { type: "string", nullable: true } }
      }
    }
  },
  paths: {
    "/pets": {
      get: {
        operationId: "listPets",
        summary: "List pets",
        parameters: [
          { name: "limit", in: "query", schema: { type: "integer", maximum: 100 } },
          { name: "tags", in: "query", schema: { type: "array", items: { type: "string" } } }
        ],
        responses: { "200": { description: "ok" } }
      },
      post: {
        operationId: "createPet",
        requestBody: {
          required: true,
          content: { "application/json": { schema: { $ref: "#/components/schemas/NewPet" } } }
        },
        responses: { "201": { description: "created" } }
      }
    },
    "/pets/{petId}": {
      parameters: [{ name: "petId", in: "path", required: true, schema: { type: "string" } }],
      get: { operationId: "getPet", summary: "Get a pet", responses: { "200": { description: "ok" } } },
      delete: { operationId: "deletePet", responses: { "204": { description: "gone" } } }
    },
    "/files/{name}": {
      get: {
        operationId: "getFile",
        parameters: [{ name: "name", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "bytes" } }
      }
    },
    "/slow": { get: { operationId: "slow", responses: { "200": { description: "eventually" } } } }
  }
})

export const json = (body: unknown) => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body)
})

export const createConnector = async (
  node: TestNode,
  apiKey: string,
  spec: unknown,
  extra: Record<string, unknown> = {}
) => {
  const response = await node.fetch("/v1/tools/connectors", { ...json({ spec, ...extra }), apiKey })
  if (response.status !== 201) throw new Error(`create connector: ${response.status} ${await response.text()}`)
  return response.json()
}

export const createConnection = async (
  node: TestNode,
  apiKey: string,
  connectorId: string,
  body: Record<string, unknown>
) => {
  const response = await node.fetch(`/v1/tools/connectors/${connectorId}/connections`, { ...json(body), apiKey })
  if (response.status !== 201) throw new Error(`create connection: ${response.status} ${await response.text()}`)
  return response.json()
}

export const invoke = (
  node: TestNode,
  apiKey: string,
  connectorId: string,
  connectionId: string,
  operation: string,
  body: unknown = {}
) =>
  node.fetch(`/v1/tools/connectors/${connectorId}/connections/${connectionId}/${operation}`, { ...json(body), apiKey })
