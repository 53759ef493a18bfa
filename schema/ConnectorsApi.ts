import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  CatalogPage,
  Connection,
  ConnectionCreated,
  Connector,
  ConnectorImported,
  CreateConnection,
  CreateConnector,
  InvokeOperation,
  Operation,
  OperationSchema,
  UpdateConnection
} from "./Connectors.js"
import {
  BadGatewayWire,
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  GatewayTimeoutWire,
  NotFoundWire,
  UnprocessableWire
} from "./Errors.js"
import { ConnectionId, ConnectorId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { IntegerParam } from "./QueryParams.js"
import { Authentication } from "./Security.js"

const ConnectorPath = Schema.Struct({ connector_id: ConnectorId })
const ConnectionPath = Schema.Struct({ connector_id: ConnectorId, connection_id: ConnectionId })
/** `_` in place of the connector id: resolved from the connection (spec 2.1). */
const AnyConnectorId = Schema.Union(ConnectorId, Schema.Literal("_"))
const OperationPath = Schema.Struct({
  connector_id: AnyConnectorId,
  connection_id: ConnectionId,
  operation_id: Schema.String
})

export class ToolsApi extends HttpApiGroup.make("tools")
  .add(
    HttpApiEndpoint.get("listTools", "/tools")
      .annotateContext(
        operation({
          summary: "Search the tool catalog",
          permission: Policy.anyMember,
          errors: ["type_required", "invalid_cursor"]
        })
      )
      .setUrlParams(Schema.Struct({
        type: Schema.optional(Schema.String).annotations({ description: "`connector` selects connectors (required)." }),
        query: Schema.optional(Schema.String).annotations({ description: "Case-insensitive name search." }),
        limit: Schema.optional(IntegerParam(1, 200)).annotations({
          description: "Page size, 1–200 (default 50)."
        }),
        cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
      }))
      .addSuccess(CatalogPage)
      .annotate(OpenApi.Description, "Search the tool catalog (spec 4.1): `{items, total}` plus `next_cursor`.")
  )
  .add(
    HttpApiEndpoint.post("createConnector", "/tools/connectors")
      .annotateContext(
        operation({ summary: "Register a connector", permission: Policy.addConnectors, errors: ["invalid_openapi"] })
      )
      .setPayload(CreateConnector)
      .addSuccess(ConnectorImported, { status: 201 })
      .annotate(OpenApi.Description, "Register a connector from an OpenAPI 3.0/3.1 or Swagger 2.0 document.")
  )
  .add(
    HttpApiEndpoint.get("getConnector", "/tools/connectors/:connector_id")
      .annotateContext(operation({ summary: "Get a connector", permission: Policy.anyMember, errors: [] }))
      .setPath(ConnectorPath)
      .addSuccess(Connector)
  )
  .add(
    HttpApiEndpoint.put("replaceConnector", "/tools/connectors/:connector_id")
      .annotateContext(
        operation({
          summary: "Replace a connector's document",
          permission: Policy.changeConnectors,
          errors: ["invalid_openapi", "built_in_connector"]
        })
      )
      .setPath(ConnectorPath)
      .setPayload(CreateConnector)
      .addSuccess(ConnectorImported)
      .annotate(OpenApi.Description, "Replace the connector's document; its connections stay.")
  )
  .add(
    HttpApiEndpoint.del("archiveConnector", "/tools/connectors/:connector_id")
      .annotateContext(
        operation({
          summary: "Archive a connector",
          permission: Policy.removeConnectors,
          errors: ["built_in_connector"]
        })
      )
      .setPath(ConnectorPath)
      .addSuccess(Connector)
      .annotate(
        OpenApi.Description,
        "Archive the connector: it leaves the catalog and can no longer be invoked. Its connections are " +
          "deleted, their stored credentials erased."
      )
  )
  .add(
    HttpApiEndpoint.get("listOperations", "/tools/connectors/:connector_id/operations")
      .annotateContext(
        operation({ summary: "List a connector's operations", permission: Policy.anyMember, errors: [] })
      )
      .setPath(ConnectorPath)
      .setUrlParams(Schema.Struct({
        connection_id: Schema.optional(ConnectionId),
        query: Schema.optional(Schema.String).annotations({ description: "Filter by name, description or path." })
      }))
      .addSuccess(Schema.Array(Operation))
      .annotate(OpenApi.Description, "The connector's operations (spec 4.3).")
  )
  .add(
    HttpApiEndpoint.post("createConnection", "/tools/connectors/:connector_id/connections")
      .annotateContext(
        operation({
          summary: "Connect a connector",
          permission: Policy.anyMember,
          errors: ["bad_request", "credentials_not_accepted", "forbidden"],
          access: "Organizational connections need Builder or above; a personal connection needs a personal key."
        })
      )
      .setPath(ConnectorPath)
      .setPayload(CreateConnection)
      .addSuccess(ConnectionCreated, { status: 201 })
      .annotate(
        OpenApi.Description,
        "Connect a connector (spec 4.2). OAuth2 authorization-code connectors answer with `connector_page_url`."
      )
  )
  .add(
    HttpApiEndpoint.get("listConnections", "/tools/connectors/:connector_id/connections")
      .annotateContext(
        operation({
          summary: "List a connector's connections",
          permission: Policy.anyMember,
          errors: [],
          access: "Organizational connections and the caller's own personal ones."
        })
      )
      .setPath(ConnectorPath)
      .addSuccess(Schema.Array(Connection))
  )
  .add(
    HttpApiEndpoint.get("getConnection", "/tools/connectors/:connector_id/connections/:connection_id")
      .annotateContext(
        operation({
          summary: "Get a connection",
          permission: Policy.anyMember,
          errors: [],
          access: "Organizational connections and the caller's own personal ones."
        })
      )
      .setPath(ConnectionPath)
      .addSuccess(Connection)
  )
  .add(
    HttpApiEndpoint.patch("updateConnection", "/tools/connectors/:connector_id/connections/:connection_id")
      .annotateContext(
        operation({
          summary: "Change a connection",
          permission: Policy.anyMember,
          errors: ["credentials_not_accepted", "forbidden"],
          access: "Organizational connections need Builder or above; a personal connection only its owner."
        })
      )
      .setPath(ConnectionPath)
      .setPayload(UpdateConnection)
      .addSuccess(ConnectionCreated)
      .annotate(OpenApi.Description, "Rename a connection, point it elsewhere, or replace its credentials.")
  )
  .add(
    HttpApiEndpoint.del("deleteConnection", "/tools/connectors/:connector_id/connections/:connection_id")
      .annotateContext(
        operation({
          summary: "Delete a connection",
          permission: Policy.anyMember,
          errors: ["forbidden"],
          access: "Organizational connections need Builder or above; a personal connection only its owner."
        })
      )
      .setPath(ConnectionPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Description, "Delete a connection; its stored credentials are erased.")
  )
  .add(
    HttpApiEndpoint.post("authorizeConnection", "/tools/connections/:connection_id/authorize")
      .annotateContext(
        operation({
          summary: "Authorize a connection again",
          permission: Policy.anyMember,
          errors: ["not_oauth", "forbidden"],
          access: "Organizational connections need Builder or above; a personal connection only its owner."
        })
      )
      .setPath(Schema.Struct({ connection_id: ConnectionId }))
      .addSuccess(ConnectionCreated)
      .annotate(OpenApi.Description, "A new `connector_page_url` to (re-)authorize an OAuth2 connection.")
  )
  .add(
    HttpApiEndpoint.get(
      "operationSchema",
      "/tools/connectors/:connector_id/connections/:connection_id/:operation_id/schema"
    )
      .annotateContext(
        operation({ summary: "Get an operation's input schema", permission: Policy.anyMember, errors: [] })
      )
      .setPath(OperationPath)
      .addSuccess(OperationSchema)
      .annotate(OpenApi.Description, "The operation's input schema (spec 4.4).")
  )
  .add(
    HttpApiEndpoint.post("invokeOperation", "/tools/connectors/:connector_id/connections/:connection_id/:operation_id")
      .annotateContext(operation({
        summary: "Invoke a connector operation",
        permission: Policy.anyMember,
        errors: [
          "header_not_allowed",
          "parameter_not_allowed",
          "body_not_accepted",
          "egress_refused",
          "connection_pending_authorization",
          "connection_needs_reauthentication",
          "connection_not_found",
          "connector_has_no_server_url",
          "path_outside_server_url",
          "upstream_unreachable",
          "upstream_timeout"
        ],
        access: "Organizational connections and the caller's own personal ones."
      }))
      .setPath(OperationPath)
      .setPayload(Schema.NullOr(InvokeOperation))
      .addSuccess(Schema.Unknown.annotations({ description: "The target API's response, passed through unchanged." }))
      .addError(BadGatewayWire)
      .addError(GatewayTimeoutWire)
      .addError(UnprocessableWire)
      .annotate(
        OpenApi.Description,
        "Invoke an operation (spec 4.5) with its spec-defined method and the connection's credentials. " +
          "Errors of ours carry `x-switchyard-error: true`; anything else is the target's response."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Connectors")
  .annotate(
    OpenApi.Description,
    "Connectors imported from OpenAPI documents, their connections (credentials) and operations, and invoking them (docs/guides/connectors.md)."
  )
{}
