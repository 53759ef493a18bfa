import { at, connectionId, created, list, ok, type OperationExample } from "./Story.js"

const connectorId = "f556e7a1-e8b6-40a7-bae1-81230bda760d"

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
  server_url: null,
  created_at: at(12, "08:45:00"),
  updated_at: at(12, "08:45:00")
}

const connector = (connections: ReadonlyArray<unknown>) => ({
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
  updated_at: at(12, "08:40:00")
})

/** `id` is the operation's method and path, `operationId` the imported document's. */
const operation = (id: string, operationId: string, method: string, path: string, pretty_name: string) => ({
  id,
  operationId,
  path,
  method,
  pretty_name,
  pretty_description: pretty_name
})

export const connectorExamples: Record<string, OperationExample> = {
  listTools: { response: ok({ ...list(connector([connection])), next_cursor: null }) },
  createConnector: {
    request: { spec: ordersSpec, name: "Orders" },
    response: created({ ...connector([]), import_report: { imported: 2, skipped: [], warnings: [] } })
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
  invokeOperation: {
    request: { path_params: { id: "1234" }, query_params: { expand: "items" } },
    response: ok({ id: "1234", status: "shipped" })
  }
}
