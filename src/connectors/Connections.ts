import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import {
  ConnectionCreated,
  type CreateConnection,
  type Credentials,
  type InvokeOperation,
  type UpdateConnection
} from "../../schema/Connectors.js"
import { BadRequest, NotFound } from "../../schema/Errors.js"
import type { ConnectionId, ConnectorId } from "../../schema/Ids.js"
import { Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AuditLog, changedFields } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { requireOrganizationKey } from "../identity/IdentityPolicy.js"
import { isHttpUrl } from "../support/HttpUrl.js"
import { invalidField } from "../support/Issues.js"
import { TtlCache } from "../support/TtlCache.js"
import { SWITCHYARD_CONNECTOR_ID } from "./BuiltinConnectors.js"
import { ConnectionCredentials } from "./ConnectionCredentials.js"
import { sealingContext } from "./ConnectionEntityLive.js"
import { ConnectorCatalog, findOperation, toConnection } from "./ConnectorCatalog.js"
import { type ConnectionRow, ConnectorRepo, type ConnectorRow } from "./ConnectorRepo.js"
import { CredentialVault } from "./CredentialVault.js"
import { OAuthAuthorizations } from "./OAuthAuthorizations.js"
import { type InvokeContext, OperationInvoker } from "./OperationInvoker.js"
import { chooseScheme, oauthFlow } from "./SecuritySchemes.js"

const checkServerUrl = (url: string | null | undefined) =>
  url === undefined || url === null || isHttpUrl(url)
    ? Effect.void
    : Effect.fail(invalidField("server_url", "must be an absolute http(s) URL."))

/**
 * A connection to the built-in Switchyard connector holds neither credentials nor a URL: every call through
 * it runs as its caller against this Switchyard (OwnApi), so anything stored would only be misleading.
 */
const checkOwnApiConnection = (
  connectorId: ConnectorId,
  input: { readonly credentials?: Credentials | undefined; readonly server_url?: string | null | undefined }
) =>
  connectorId !== SWITCHYARD_CONNECTOR_ID
    ? Effect.void
    : input.credentials !== undefined && input.credentials.type !== "none"
    ? Effect.fail(BadRequest.of(
      "The built-in Switchyard connector calls Switchyard as whoever invokes it, so its connections store no " +
        "credentials: leave `credentials` out or send {\"type\": \"none\"}.",
      undefined,
      "credentials_not_accepted"
    ))
    : input.server_url !== undefined && input.server_url !== null
    ? Effect.fail(
      invalidField("server_url", "cannot be set: the built-in Switchyard connector always calls this Switchyard.")
    )
    : Effect.void

/**
 * A new API key without `scheme` replaces the old one where the old one went: rotating a key must not move it
 * to another of the connector's schemes (from a query parameter to a header, say).
 */
const keepingScheme = (connector: ConnectorRow, connection: ConnectionRow, credentials: Credentials): Credentials =>
  credentials.type === "api_key" && credentials.scheme === undefined && connection.auth_type === "api_key" &&
    connection.security_scheme !== null &&
    connector.imported.securitySchemes[connection.security_scheme]?.type === "apiKey"
    ? { ...credentials, scheme: connection.security_scheme }
    : credentials

/** Organizational connections are managed by Admins; a personal one by its owner. */
const mayManage = (principal: Principal, row: Pick<ConnectionRow, "access_scope" | "owner_user_id">) =>
  row.access_scope === "personal"
    ? row.owner_user_id === principal.userId
      ? Effect.void
      : Effect.fail(NotFound.of("Connection"))
    : requireOrganizationKey(principal, Policy.manageOrganizationalConnections)

/** Connections (spec 4.2): an organization's authenticated access to a connector. */
export class Connections extends Effect.Service<Connections>()("connectors/Connections", {
  effect: Effect.gen(function*() {
    const repo = yield* ConnectorRepo
    const catalog = yield* ConnectorCatalog
    const vault = yield* CredentialVault
    const credentials = yield* ConnectionCredentials
    const authorizations = yield* OAuthAuthorizations
    const invoker = yield* OperationInvoker
    const audit = yield* AuditLog
    const connectionTarget = (row: Pick<ConnectionRow, "id" | "name">) => ({
      type: "connection",
      id: row.id,
      name: row.name
    })
    const ttl = Duration.toMillis((yield* SwitchyardConfig).connectorCacheTtl)
    const rows = new TtlCache<ConnectionId, ConnectionRow>(ttl)

    const seal = (row: Pick<ConnectionRow, "organization_id" | "connector_id" | "id">, secret: unknown) =>
      vault.seal(secret, sealingContext(row))

    /**
     * A connection the caller may use: same organization, and theirs if personal. Hot paths read this
     * node's recent copy; reads that show the connection (`fresh`) go to the database, since the entity
     * and the OAuth callback change its status.
     */
    const find = (principal: Principal, id: ConnectionId, fresh = false) =>
      Effect.suspend(() => {
        const hit = fresh ? undefined : rows.get(id)
        const visible = (row: ConnectionRow) =>
          row.organization_id === principal.organizationId &&
          (row.access_scope === "organizational" || row.owner_user_id === principal.userId)
        if (hit !== undefined) return visible(hit) ? Effect.succeed(hit) : Effect.fail(NotFound.of("Connection", id))
        return repo.findConnection(principal.organizationId, id, principal.userId).pipe(
          Effect.flatMap((row) =>
            row === undefined ? Effect.fail(NotFound.of("Connection", id)) : Effect.succeed(rows.set(id, row))
          )
        )
      })

    /** `connector_id` `_` is resolved from the connection (spec 4.5 rule 6). */
    const ofConnector = (principal: Principal, connectorId: ConnectorId | "_", id: ConnectionId, fresh = false) =>
      Effect.flatMap(
        find(principal, id, fresh),
        (connection) =>
          connectorId !== "_" && connection.connector_id !== connectorId
            ? Effect.fail(NotFound.of(`Connection '${id}' of connector`, connectorId))
            : Effect.map(catalog.get(principal, connection.connector_id), (connector) => ({ connection, connector }))
      )

    const create = Effect.fn("Connections.create")(
      function*(principal: Principal, connectorId: ConnectorId, input: CreateConnection) {
        const connector = yield* catalog.get(principal, connectorId)
        if (input.access_scope === "personal" && principal.userId === null) {
          return yield* BadRequest.of(
            "An organization key has no user to own a personal connection; use a personal key."
          )
        }
        if (input.access_scope === "organizational") {
          yield* requireOrganizationKey(principal, Policy.createOrganizationalConnections)
        }
        yield* checkServerUrl(input.server_url)
        yield* checkOwnApiConnection(connectorId, input)
        const choice = chooseScheme(connector.imported, input.credentials)
        if (!choice.ok) {
          return yield* BadRequest.of(choice.message, undefined, "credentials_not_accepted")
        }
        const flow = oauthFlow(connector.imported, choice.scheme)
        if (input.credentials.type === "oauth2" && flow === undefined) {
          return yield* BadRequest.of(
            "This connector has no OAuth2 authorization-code or client-credentials flow.",
            undefined,
            "credentials_not_accepted"
          )
        }
        const id = Crypto.randomUUID() as ConnectionId
        const sealed = seal(
          { organization_id: principal.organizationId, connector_id: connectorId, id },
          input.credentials
        )
        const row = yield* repo.insertConnection({
          id,
          organization_id: principal.organizationId,
          connector_id: connectorId,
          name: input.name,
          access_scope: input.access_scope,
          owner_user_id: input.access_scope === "personal" ? principal.userId : null,
          auth_type: choice.authType,
          security_scheme: choice.scheme,
          server_url: input.server_url ?? null,
          status: flow?.kind === "authorizationCode" ? "pending_authorization" : "active",
          credentials: sealed.sealed,
          key_version: sealed.keyVersion,
          created_by: principal.userId
        }).pipe(audit.recorded(principal, (row) => ({
          action: "CREATE_CONNECTION",
          targets: [connectionTarget(row), { type: "connector", id: connectorId, name: connector.name }],
          details: { access_scope: row.access_scope, auth_type: row.auth_type }
        })))
        const pageUrl = flow?.kind === "authorizationCode" ? yield* authorizations.begin(row) : undefined
        return new ConnectionCreated({
          ...toConnection(row),
          ...(pageUrl === undefined ? {} : { connector_page_url: pageUrl })
        })
      }
    )

    const list = Effect.fn("Connections.list")(function*(principal: Principal, connectorId: ConnectorId) {
      yield* catalog.get(principal, connectorId)
      const found = yield* repo.connectionsOf(principal.organizationId, [connectorId], principal.userId)
      return found.map(toConnection)
    })

    const get = (principal: Principal, connectorId: ConnectorId | "_", id: ConnectionId) =>
      Effect.map(ofConnector(principal, connectorId, id, true), ({ connection }) => toConnection(connection))

    const update = Effect.fn("Connections.update")(
      function*(principal: Principal, connectorId: ConnectorId, id: ConnectionId, input: UpdateConnection) {
        const { connection, connector } = yield* ofConnector(principal, connectorId, id, true)
        yield* mayManage(principal, connection)
        yield* checkServerUrl(input.server_url)
        yield* checkOwnApiConnection(connection.connector_id, input)
        // nothing to change (`{}`, what it holds already): not written (`updated_at` stays), nothing audited.
        // The write sets only the fields given, so a change at once of another field stands.
        if (
          input.credentials === undefined && (input.name === undefined || input.name === connection.name) &&
          (input.server_url === undefined || input.server_url === connection.server_url)
        ) return new ConnectionCreated(toConnection(connection))
        let patch: Parameters<typeof repo.updateConnection>[2] = {
          ...(input.name === undefined ? {} : { name: input.name }),
          ...(input.server_url === undefined ? {} : { server_url: input.server_url })
        }
        if (input.credentials !== undefined) {
          const choice = chooseScheme(connector.imported, keepingScheme(connector, connection, input.credentials))
          if (!choice.ok) return yield* BadRequest.of(choice.message, undefined, "credentials_not_accepted")
          const flow = oauthFlow(connector.imported, choice.scheme)
          const sealed = seal(connection, input.credentials)
          patch = {
            ...patch,
            credentials: { sealed: sealed.sealed, keyVersion: sealed.keyVersion },
            auth_type: choice.authType,
            security_scheme: choice.scheme,
            status: flow?.kind === "authorizationCode" ? "pending_authorization" : "active"
          }
        }
        const row = yield* repo.updateConnection(principal.organizationId, id, patch).pipe(
          audit.recorded(principal, (row) =>
            row === undefined || changedFields(input).length === 0 ? undefined : {
              action: "UPDATE_CONNECTION",
              targets: [connectionTarget(row)],
              details: { changed: changedFields(input) }
            })
        )
        if (row === undefined) return yield* NotFound.of("Connection", id)
        rows.delete(id)
        yield* credentials.forget(id)
        const pageUrl = row.status === "pending_authorization" && input.credentials !== undefined
          ? yield* authorizations.begin(row)
          : undefined
        return new ConnectionCreated({
          ...toConnection(row),
          ...(pageUrl === undefined ? {} : { connector_page_url: pageUrl })
        })
      }
    )

    /** A fresh sign-in link for an OAuth2 connection (pending, or needing re-authentication). */
    const authorize = Effect.fn("Connections.authorize")(
      function*(principal: Principal, connectorId: ConnectorId | "_", id: ConnectionId) {
        const { connection, connector } = yield* ofConnector(principal, connectorId, id, true)
        yield* mayManage(principal, connection)
        if (oauthFlow(connector.imported, connection.security_scheme)?.kind !== "authorizationCode") {
          return yield* BadRequest.of(
            "This connection does not sign in through OAuth2 authorization code.",
            undefined,
            "not_oauth"
          )
        }
        const pageUrl = yield* authorizations.begin(connection)
        return new ConnectionCreated({ ...toConnection(connection), connector_page_url: pageUrl })
      }
    )

    const remove = Effect.fn("Connections.remove")(
      function*(principal: Principal, connectorId: ConnectorId, id: ConnectionId) {
        const { connection } = yield* ofConnector(principal, connectorId, id)
        yield* mayManage(principal, connection)
        const deleted = yield* repo.deleteConnection(principal.organizationId, id).pipe(
          audit.recorded(principal, (deleted) =>
            deleted
              ? {
                action: "DELETE_CONNECTION",
                targets: [connectionTarget(connection)],
                details: { access_scope: connection.access_scope }
              }
              : undefined)
        )
        if (!deleted) return yield* NotFound.of("Connection", id)
        rows.delete(id)
        yield* credentials.forget(id)
      }
    )

    const schema = Effect.fn("Connections.schema")(
      function*(principal: Principal, connectorId: ConnectorId | "_", id: ConnectionId, operationRef: string) {
        const { connector } = yield* ofConnector(principal, connectorId, id)
        const operation = findOperation(connector.imported, operationRef)
        if (operation === undefined) return yield* NotFound.of(`Operation '${operationRef}' of connector`, connector.id)
        return { input: operation.input }
      }
    )

    const target = (principal: Principal, connectorId: ConnectorId | "_", id: ConnectionId, operationRef: string) =>
      Effect.flatMap(ofConnector(principal, connectorId, id), ({ connection, connector }) => {
        const operation = findOperation(connector.imported, operationRef)
        return operation === undefined
          ? Effect.fail(NotFound.of(`Operation '${operationRef}' of connector`, connector.id))
          : Effect.succeed({ connection, connector, operation })
      })

    /** For the fast path: the call's target when everything about it is in this node's memory. */
    const peekTarget = (principal: Principal, connectorId: string, id: ConnectionId, operationRef: string) => {
      const connection = rows.get(id)
      if (
        connection === undefined || connection.organization_id !== principal.organizationId ||
        (connection.access_scope === "personal" && connection.owner_user_id !== principal.userId) ||
        (connectorId !== "_" && connectorId !== connection.connector_id) ||
        // the built-in Switchyard connector mints the caller's credentials per call: the invoker does that
        connection.connector_id === SWITCHYARD_CONNECTOR_ID
      ) return undefined
      const connector = catalog.peek(principal, connection.connector_id)
      const operation = connector === undefined ? undefined : findOperation(connector.imported, operationRef)
      return operation === undefined ? undefined : { connection, connector: connector!, operation }
    }

    /** Spec 4.5: the operation with its spec-defined method and the connection's stored credentials. */
    const invoke = (
      principal: Principal,
      connectorId: ConnectorId | "_",
      id: ConnectionId,
      operationRef: string,
      input: InvokeOperation,
      context: InvokeContext = {}
    ) =>
      Effect.flatMap(
        target(principal, connectorId, id, operationRef),
        (t) => invoker.invoke(principal, t, input, context)
      )

    return { create, list, get, update, authorize, remove, schema, target, peekTarget, invoke } as const
  }),
  dependencies: [ConnectorRepo.Default, ConnectorCatalog.Default, AuditLog.Default]
}) {}
