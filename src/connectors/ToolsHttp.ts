import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Api } from "../../schema/Api.js"
import { BadRequest } from "../../schema/Errors.js"
import { Principal } from "../../schema/Security.js"
import { Connections } from "./Connections.js"
import { ConnectorCatalog } from "./ConnectorCatalog.js"
import { ConnectorsLive } from "./ConnectorsLive.js"

export const ToolsHttpLive = HttpApiBuilder.group(Api, "tools", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* ConnectorCatalog
    const connections = yield* Connections
    const as = <A, E, R>(f: (p: Principal) => Effect.Effect<A, E, R>) => Effect.flatMap(Principal, f)
    return handlers
      .handle("listTools", ({ urlParams }) =>
        as((p) =>
          urlParams.type !== "connector"
            ? Effect.fail(BadRequest.of(
              urlParams.type === undefined
                ? "Pass `type=connector` (and optionally `query`) to search the catalog."
                : `Unknown type '${urlParams.type}': pass \`type=connector\`.`,
              undefined,
              "type_required"
            ))
            : catalog.list(p, { query: urlParams.query, limit: urlParams.limit ?? 50, cursor: urlParams.cursor })
        ))
      .handle("createConnector", ({ payload }) => as((p) => catalog.create(p, payload)))
      .handle("getConnector", ({ path }) => as((p) => catalog.describe(p, path.connector_id)))
      .handle("replaceConnector", ({ path, payload }) => as((p) => catalog.replace(p, path.connector_id, payload)))
      .handle("archiveConnector", ({ path }) => as((p) => catalog.archive(p, path.connector_id)))
      .handle("listOperations", ({ path, urlParams }) =>
        as((p) =>
          catalog.operations(p, path.connector_id, { connectionId: urlParams.connection_id, query: urlParams.query })
        ))
      .handle("createConnection", ({ path, payload }) =>
        as((p) =>
          connections.create(p, path.connector_id, payload)
        ))
      .handle("listConnections", ({ path }) => as((p) => connections.list(p, path.connector_id)))
      .handle("getConnection", ({ path }) => as((p) => connections.get(p, path.connector_id, path.connection_id)))
      .handle("updateConnection", ({ path, payload }) =>
        as((p) => connections.update(p, path.connector_id, path.connection_id, payload)))
      .handle("deleteConnection", ({ path }) =>
        as((p) => connections.remove(p, path.connector_id, path.connection_id)))
      .handle("authorizeConnection", ({ path }) => as((p) => connections.authorize(p, "_", path.connection_id)))
      .handle("operationSchema", ({ path }) =>
        as((p) =>
          connections.schema(p, path.connector_id, path.connection_id, path.operation_id)
        ))
      .handle("invokeOperation", ({ path, payload }) =>
        as((p) =>
          connections.invoke(p, path.connector_id, path.connection_id, path.operation_id, payload ?? {})
        ).pipe(
          Effect.map((upstream) =>
            HttpServerResponse.raw(upstream.body, { status: upstream.status, headers: upstream.headers as any })
          )
        ))
  })).pipe(Layer.provide(ConnectorsLive))
