import { adaId, at, baseUrl, connectionId, created, list, ok, type OperationExample } from "./Story.js"

const connectorId = "f556e7a1-e8b6-40a7-bae1-81230bda760d"
const legacyConnectorId = "b7e2c9a4-5d1f-4e3a-9b8c-0d6f2a4e8c1b"
const helpdeskConnectorId = "3c9e5a71-2b4d-4f6e-8a0c-1d3e5f7a9b2c"
const helpdeskConnectionId = "d6a8c0e2-4f1b-4d3a-9e5c-7b9d1f3a5c8e"

const ordersSpec = {
  openapi: "3.1.0",
  info: { title: "Orders", version: "2.0", description: "Orders, shipments and refunds of the web shop." },
  servers: [{ url: "https://orders.example.com/v2" }],
  components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
  security: [{ bearer: [] }],
  paths: {
    "/orders/{id}": {
      get: {
        operationId: "getOrder",
        summary: "Get an order",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "The order." } }
      }
    },
    "/orders/{id}/refunds": {
      post: {
        operationId: "createRefund",
        summary: "Refund an order",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        requestBody: {
          content: { "application/json": { schema: { type: "object", properties: { amount: { type: "number" } } } } }
        },
        responses: { "201": { description: "The refund." } }
      }
    }
  }
}

const connection = {
  id: connectionId,
  name: "Orders (production)",
  access_scope: "organizational",
  connector_id: connectorId,
  auth_type: "bearer",
  status: "active",
  owner_user_id: null,
  security_scheme: "bearer",
  server_url: null,
  created_at: at(12, "08:45:00"),
  updated_at: at(12, "08:45:00")
}

const connector = (connections: ReadonlyArray<unknown>, updated_at = at(12, "08:40:00")) => ({
  kind: "connector",
  id: connectorId,
  name: "Orders",
  description: ordersSpec.info.description,
  status: "ready",
  total_operations: 2,
  using_built_in_auth: false,
  built_in: false,
  auth_types: ["bearer"],
  server_url: "https://orders.example.com/v2",
  connections,
  created_at: at(12, "08:40:00"),
  updated_at
})
const noProblems = { imported: 2, skipped: [], warnings: [] }

/** `id` is the operation's method and path, `operationId` the imported document's. */
const operation = (id: string, operationId: string, method: string, path: string, pretty_name: string) => ({
  id,
  operationId,
  path,
  method,
  pretty_name,
  pretty_description: pretty_name
})

/** A personal OAuth2 (authorization code) connection of Ada's whose refresh token stopped working. */
const helpdeskConnection = {
  id: helpdeskConnectionId,
  name: "Ada's helpdesk",
  access_scope: "personal",
  connector_id: helpdeskConnectorId,
  auth_type: "oauth2",
  status: "needs_reauthentication",
  owner_user_id: adaId,
  security_scheme: "oauth",
  server_url: null,
  created_at: at(13, "11:00:00"),
  updated_at: at(15, "06:12:00")
}

/** `createRefund`'s invoke input (spec 2.5): every group is there, empty when the operation has none. */
const refundInput = {
  type: "object",
  properties: {
    path_params: {
      type: "object",
      properties: { id: { type: "string" } },
      required: ["id"],
      additionalProperties: false
    },
    query_params: { type: "object", properties: {}, additionalProperties: false },
    body_params: { type: "object", properties: { amount: { type: "number" } } },
    headers: { type: "object", properties: {}, additionalProperties: { type: "string" } }
  },
  required: ["path_params"],
  additionalProperties: false
}

export const connectorExamples: Record<string, OperationExample> = {
  listTools: { response: ok({ ...list(connector([connection])), next_cursor: null }) },
  createConnector: {
    request: { spec: ordersSpec, name: "Orders" },
    response: created({ ...connector([]), import_report: noProblems })
  },
  listOperations: {
    response: ok([
      operation("get_orders_id", "getOrder", "get", "/orders/{id}", "Get an order"),
      operation("post_orders_id_refunds", "createRefund", "post", "/orders/{id}/refunds", "Refund an order")
    ])
  },
  createConnection: {
    request: {
      name: connection.name,
      access_scope: "organizational",
      credentials: { type: "bearer", token: "orders-api-token" }
    },
    response: created(connection)
  },
  listConnections: { response: ok([connection]) },
  getConnector: { response: ok(connector([connection])) },
  replaceConnector: {
    request: { spec: { ...ordersSpec, info: { ...ordersSpec.info, version: "2.1" } } },
    response: ok({ ...connector([connection], at(15, "08:00:00")), import_report: noProblems })
  },
  archiveConnector: {
    // an older connector of the same API that no agent uses any more: archived, it answers without connections
    response: ok({
      ...connector([], at(15, "08:05:00")),
      id: legacyConnectorId,
      name: "Orders v1",
      server_url: "https://orders.example.com/v1",
      created_at: at(10, "09:00:00")
    })
  },
  getConnection: { response: ok(connection) },
  updateConnection: {
    request: { credentials: { type: "bearer", token: "orders-api-token-2026" } },
    response: ok({ ...connection, updated_at: at(15, "08:10:00") })
  },
  authorizeConnection: {
    response: ok({
      ...helpdeskConnection,
      connector_page_url: `${baseUrl}/oauth/connections/start?state=Vb3nQ8xK1mZr7TcY5wHf2LpD9sGj4AeU6oNi0RkXq2E`
    })
  },
  operationSchema: { response: ok({ input: refundInput }) },
  invokeOperation: {
    // getOrder declares no query parameters: any in `query_params` would be refused
    request: { path_params: { id: "1234" } },
    response: ok({ id: "1234", status: "shipped" })
  }
}
