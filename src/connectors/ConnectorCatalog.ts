import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import {
  type AccessScope,
  Connection,
  Connector,
  ConnectorImported,
  type CreateConnector,
  Operation
} from "../../schema/Connectors.js"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import type { ConnectionId, ConnectorId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { canonicalJson } from "../audit/AuditChain.js"
import { AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { transactionIn } from "../db/Transaction.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { isHttpUrl } from "../support/HttpUrl.js"
import { invalidField } from "../support/Issues.js"
import { TtlCache } from "../support/TtlCache.js"
import { isUuid } from "../support/Uuid.js"
import { type ConnectionRow, ConnectorRepo, type ConnectorRow, type ConnectorSummaryRow } from "./ConnectorRepo.js"
import { withEveryGroup } from "./openapi/InputSchema.js"
import {
  type ImportedConnector,
  type ImportedOperation,
  importOpenApi,
  OpenApiImportError
} from "./openapi/OpenApiImport.js"
import { absoluteServer } from "./openapi/Servers.js"
import { acceptedAuthTypes } from "./SecuritySchemes.js"

export const toConnection = (row: ConnectionRow) =>
  new Connection({
    id: row.id,
    name: row.name,
    access_scope: row.access_scope as AccessScope,
    connector_id: row.connector_id,
    auth_type: row.auth_type,
    status: row.status,
    owner_user_id: row.owner_user_id,
    security_scheme: row.security_scheme,
    server_url: row.server_url,
    created_at: row.created_at,
    updated_at: row.updated_at
  })

export const toConnector = (row: ConnectorRow | ConnectorSummaryRow, connections: ReadonlyArray<ConnectionRow>) => {
  const authTypes = acceptedAuthTypes(row.imported)
  return new Connector({
    kind: "connector",
    id: row.id,
    name: row.name,
    description: row.description,
    status: "ready",
    total_operations: "total_operations" in row ? row.total_operations : row.imported.operations.length,
    using_built_in_auth: authTypes.length === 1 && authTypes[0] === "none",
    built_in: row.built_in,
    auth_types: authTypes,
    server_url: row.server_url ?? absoluteServer(row.imported.servers) ?? null,
    connections: connections.map(toConnection),
    created_at: row.created_at,
    updated_at: row.updated_at
  })
}

export const toOperation = (op: ImportedOperation) =>
  new Operation({
    id: op.id,
    operationId: op.operationId,
    path: op.path,
    method: op.method,
    pretty_name: op.pretty_name,
    pretty_description: op.pretty_description
  })

const operationIndex = new WeakMap<ImportedConnector, Map<string, ImportedOperation>>()
/** `operation_id` is either the operation's `id` or its `operationId` (spec 2.1). */
export const findOperation = (imported: ImportedConnector, ref: string): ImportedOperation | undefined => {
  let index = operationIndex.get(imported)
  if (index === undefined) {
    index = new Map()
    for (const op of imported.operations) {
      index.set(op.operationId, op)
      index.set(op.id, op)
    }
    operationIndex.set(imported, index)
  }
  return index.get(ref)
}

/** A connector stored before spec 2.5's three groups were always emitted, with them (see `withEveryGroup`). */
const withEveryInputGroup = (imported: ImportedConnector): ImportedConnector => {
  const operations = imported.operations.map((op) => {
    const input = withEveryGroup(op.input)
    return input === op.input ? op : { ...op, input }
  })
  return operations.every((op, i) => op === imported.operations[i]) ? imported : { ...imported, operations }
}

const encodeCursor = (row: Pick<ConnectorRow, "name" | "id">) =>
  Buffer.from(JSON.stringify([row.name.toLowerCase(), row.id])).toString("base64url")
const decodeCursor = (cursor: string) => {
  try {
    const [name, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    return typeof name === "string" && typeof id === "string" && isUuid(id) ? { name, id } : undefined
  } catch {
    return undefined
  }
}

const parseDocument = (spec: CreateConnector["spec"]) =>
  Effect.try({
    try: () => ({ imported: importOpenApi(spec), document: typeof spec === "string" ? { text: spec } : spec }),
    catch: (e) =>
      e instanceof OpenApiImportError
        ? BadRequest.of(
          `The OpenAPI document cannot be imported: ${e.message}`,
          { pointer: e.pointer },
          "invalid_openapi"
        )
        : BadRequest.of(`The OpenAPI document cannot be imported: ${String(e)}`, undefined, "invalid_openapi")
  })

const checkServerUrl = (url: string | null | undefined) =>
  url === undefined || url === null || isHttpUrl(url)
    ? Effect.void
    : Effect.fail(invalidField("server_url", "must be an absolute http(s) URL."))

/** The tool catalog (spec 4.1): the organization's connectors and the built-in ones. */
export class ConnectorCatalog extends Effect.Service<ConnectorCatalog>()("connectors/ConnectorCatalog", {
  effect: Effect.gen(function*() {
    const repo = yield* ConnectorRepo
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    const ttl = Duration.toMillis((yield* SwitchyardConfig).connectorCacheTtl)
    const connectors = new TtlCache<ConnectorId, ConnectorRow>(ttl)

    // an unchanged connector keeps its `imported` object, so validators compiled for it stay cached
    const lastImported = new Map<ConnectorId, { readonly updatedAt: number; readonly imported: ImportedConnector }>()
    const stable = (row: ConnectorRow): ConnectorRow => {
      const last = lastImported.get(row.id)
      if (last !== undefined && last.updatedAt === row.updated_at.getTime()) return { ...row, imported: last.imported }
      const imported = withEveryInputGroup(row.imported)
      lastImported.set(row.id, { updatedAt: row.updated_at.getTime(), imported })
      return imported === row.imported ? row : { ...row, imported }
    }

    const withConnections = (principal: Principal, rows: ReadonlyArray<ConnectorRow | ConnectorSummaryRow>) =>
      Effect.map(
        repo.connectionsOf(principal.organizationId, rows.map((r) => r.id), principal.userId),
        (connections) => rows.map((row) => toConnector(row, connections.filter((c) => c.connector_id === row.id)))
      )

    const list = Effect.fn("ConnectorCatalog.list")(function*(
      principal: Principal,
      options: { readonly query: string | undefined; readonly limit: number; readonly cursor: string | undefined }
    ) {
      const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor)
      if (options.cursor !== undefined && after === undefined) {
        return yield* BadRequest.of(
          "`cursor` is not one this API returned; start again without it.",
          undefined,
          "invalid_cursor"
        )
      }
      const [rows, total] = yield* repo.listConnectors(principal.organizationId, {
        query: options.query,
        after,
        limit: options.limit + 1
      })
      const page = rows.slice(0, options.limit)
      return {
        items: yield* withConnections(principal, page),
        total,
        next_cursor: rows.length > options.limit ? encodeCursor(page[page.length - 1]!) : null
      }
    })

    /** A usable connector of the caller's organization (or built-in), from memory when recently read. */
    const get = (principal: Principal, id: ConnectorId) =>
      Effect.suspend(() => {
        const hit = connectors.get(id)
        if (hit !== undefined && (hit.organization_id === null || hit.organization_id === principal.organizationId)) {
          return Effect.succeed(hit)
        }
        return repo.findConnector(principal.organizationId, id).pipe(
          Effect.flatMap((row) =>
            row === undefined
              ? Effect.fail(NotFound.of("Connector", id))
              : Effect.succeed(connectors.set(id, stable(row)))
          )
        )
      })

    /** For the fast path: the connector if this node read it recently. */
    const peek = (principal: Principal, id: ConnectorId) => {
      const hit = connectors.get(id)
      return hit !== undefined && (hit.organization_id === null || hit.organization_id === principal.organizationId)
        ? hit
        : undefined
    }

    const describe = Effect.fn("ConnectorCatalog.describe")(function*(principal: Principal, id: ConnectorId) {
      const row = yield* get(principal, id)
      return (yield* withConnections(principal, [row]))[0]!
    })

    const create = Effect.fn("ConnectorCatalog.create")(function*(principal: Principal, input: CreateConnector) {
      yield* requireOrganizationKey(principal, Policy.addConnectors)
      yield* checkServerUrl(input.server_url)
      const { document, imported } = yield* parseDocument(input.spec)
      const row = yield* repo.insertConnector({
        id: Crypto.randomUUID() as ConnectorId,
        organizationId: principal.organizationId,
        name: input.name ?? (imported.title || "Untitled API"),
        description: input.description ?? imported.description,
        document,
        imported,
        serverUrl: input.server_url ?? null,
        createdBy: principal.userId
      }).pipe(audit.recorded(principal, (row) => ({
        action: "CREATE_CONNECTOR",
        targets: [{ type: "connector", id: row.id, name: row.name }]
      })))
      return new ConnectorImported({ ...toConnector(row, []), import_report: imported.report })
    })

    /** Replaces the document; connections stay. */
    const replace = Effect.fn("ConnectorCatalog.replace")(
      function*(principal: Principal, id: ConnectorId, input: CreateConnector) {
        yield* requireOrganizationKey(principal, Policy.changeConnectors)
        yield* checkServerUrl(input.server_url)
        if ((yield* get(principal, id)).built_in) {
          return yield* BadRequest.of("Built-in connectors cannot be changed.", undefined, "built_in_connector")
        }
        const { document, imported } = yield* parseDocument(input.spec)
        // the row locked from its read to its write: a PUT at once that leaves out the name or server URL
        // keeps what the other wrote, rather than writing back what it read before
        const row = yield* transaction(Effect.gen(function*() {
          const current = yield* repo.findConnector(principal.organizationId, id, true)
          if (current === undefined) return yield* NotFound.of("Connector", id)
          const fields = {
            name: input.name ?? current.name,
            description: input.description ?? (imported.description || current.description),
            document,
            imported,
            serverUrl: input.server_url === undefined ? current.server_url : input.server_url
          }
          // what it holds already (the same document uploaded again): not written, nothing audited
          if (
            fields.name === current.name && fields.description === current.description &&
            fields.serverUrl === current.server_url &&
            canonicalJson(document) === canonicalJson(current.document) &&
            canonicalJson(imported) === canonicalJson(current.imported)
          ) return current
          const row = yield* repo.replaceConnector(principal.organizationId, id, fields)
          if (row === undefined) return yield* NotFound.of("Connector", id)
          yield* audit.record(principal, {
            action: "UPDATE_CONNECTOR",
            targets: [{ type: "connector", id, name: row.name }]
          })
          return row
        }))
        connectors.delete(id)
        const [withConns] = yield* withConnections(principal, [row])
        return new ConnectorImported({ ...withConns!, import_report: imported.report })
      }
    )

    const archive = Effect.fn("ConnectorCatalog.archive")(function*(principal: Principal, id: ConnectorId) {
      yield* requireOrganizationKey(principal, Policy.removeConnectors)
      const current = yield* get(principal, id)
      if (current.built_in) {
        return yield* BadRequest.of("Built-in connectors cannot be removed.", undefined, "built_in_connector")
      }
      const row = yield* repo.archiveConnector(principal.organizationId, id).pipe(
        audit.recorded(principal, (row) =>
          row === undefined
            ? undefined
            : {
              action: "ARCHIVE_CONNECTOR",
              targets: [{ type: "connector", id, name: row.name }],
              details: { deleted_connections: row.deleted_connections.length }
            })
      )
      if (row === undefined) return yield* NotFound.of("Connector", id)
      connectors.delete(id)
      return toConnector(row, [])
    })

    const operations = Effect.fn("ConnectorCatalog.operations")(function*(
      principal: Principal,
      id: ConnectorId,
      options: { readonly connectionId: ConnectionId | undefined; readonly query: string | undefined }
    ) {
      const row = yield* get(principal, id)
      if (options.connectionId !== undefined) {
        const connection = yield* repo.findConnection(principal.organizationId, options.connectionId, principal.userId)
        if (connection === undefined || connection.connector_id !== id) {
          return yield* NotFound.of(`Connection '${options.connectionId}' of connector`, id)
        }
      }
      const q = options.query?.toLowerCase()
      return row.imported.operations
        .filter((op) =>
          q === undefined ||
          [op.operationId, op.pretty_name, op.pretty_description, op.path].some((s) => s.toLowerCase().includes(q))
        )
        .map(toOperation)
    })

    return {
      list,
      get,
      peek,
      describe,
      create,
      replace,
      archive,
      operations,
      forget: (id: ConnectorId) => connectors.delete(id)
    } as const
  }),
  dependencies: [ConnectorRepo.Default, AuditLog.Default]
}) {}
