import { Schema } from "effect"
import { ConnectionId, ConnectorId, UserId } from "./Ids.js"
import { requestBody } from "./RequestBody.js"
import { Timestamp } from "./Timestamp.js"

export const AccessScope = Schema.Literal("organizational", "personal").annotations({
  description: "`organizational`: usable by the whole organization. `personal`: belongs to its creator, " +
    "visible and usable only by them; the agent then acts with that person's own permissions."
})
export type AccessScope = typeof AccessScope.Type

export const AuthType = Schema.Literal("none", "api_key", "bearer", "basic", "oauth2")
export type AuthType = typeof AuthType.Type

export const ConnectionStatus = Schema.Literal("active", "pending_authorization", "needs_reauthentication").annotations(
  {
    description: "`pending_authorization`: finish the OAuth sign-in at `connector_page_url`. " +
      "`needs_reauthentication`: a token refresh failed; authorize again (client credentials: PATCH `credentials`)."
  }
)

/** Spec 2.3, plus fields of our own. */
export class Connection extends Schema.Class<Connection>("Connection")({
  id: ConnectionId,
  name: Schema.String,
  access_scope: AccessScope,
  connector_id: ConnectorId,
  auth_type: AuthType,
  status: ConnectionStatus,
  owner_user_id: Schema.NullOr(UserId),
  security_scheme: Schema.NullOr(Schema.String).annotations({
    description: "The connector's security scheme the credentials are applied by (its name in the document's " +
      "`securitySchemes`); null without credentials."
  }),
  server_url: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export class ConnectionCreated extends Schema.Class<ConnectionCreated>("ConnectionCreated")({
  ...Connection.fields,
  connector_page_url: Schema.optional(Schema.String).annotations({
    description: "OAuth2 authorization-code connectors: open this page in a browser to finish connecting."
  })
}) {}

/** Spec 2.2: a catalog item. */
export class Connector extends Schema.Class<Connector>("Connector")({
  kind: Schema.Literal("connector"),
  id: ConnectorId,
  name: Schema.String,
  description: Schema.String,
  status: Schema.Literal("ready"),
  total_operations: Schema.Int,
  using_built_in_auth: Schema.Boolean.annotations({
    description: "True when the connector needs no credentials of yours (its API has no security scheme)."
  }),
  built_in: Schema.Boolean.annotations({ description: "Shipped with Switchyard and visible to every organization." }),
  auth_types: Schema.Array(AuthType).annotations({ description: "Credential types a connection may use." }),
  server_url: Schema.NullOr(Schema.String),
  connections: Schema.Array(Connection).annotations({ description: "Empty: not connected yet." }),
  created_at: Timestamp,
  updated_at: Timestamp
}) {}

export const ImportReport = Schema.Struct({
  imported: Schema.Int,
  skipped: Schema.Array(
    Schema.Struct({ method: Schema.String, path: Schema.String, pointer: Schema.String, reason: Schema.String })
  ),
  warnings: Schema.Array(Schema.Struct({ pointer: Schema.String, message: Schema.String }))
}).annotations({ identifier: "ImportReport", description: "What the import took, skipped (and why) and warned about." })

export class ConnectorImported extends Schema.Class<ConnectorImported>("ConnectorImported")({
  ...Connector.fields,
  import_report: ImportReport
}) {}

export const CreateConnector = Schema.Struct({
  spec: Schema.Union(Schema.String, Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "An OpenAPI 3.0/3.1 or Swagger 2.0 document: a JSON object, or JSON/YAML text."
  }),
  name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))).annotations({
    description: "Default: the document's `info.title`."
  }),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(4000))),
  server_url: Schema.optional(Schema.NullOr(Schema.String)).annotations({
    description: "Base URL overriding the document's servers (e.g. an on-prem install). On `PUT`, left out keeps " +
      "the current one; `null` removes it (the document's servers apply)."
  })
}).annotations({ identifier: "CreateConnector", ...requestBody })
export type CreateConnector = typeof CreateConnector.Type

export const Credentials = Schema.Union(
  Schema.Struct({ type: Schema.Literal("none") }),
  Schema.Struct({
    type: Schema.Literal("api_key"),
    value: Schema.String.pipe(Schema.minLength(1)),
    scheme: Schema.optional(Schema.String).annotations({ description: "Security scheme name, when several apply." })
  }),
  Schema.Struct({ type: Schema.Literal("bearer"), token: Schema.String.pipe(Schema.minLength(1)) }),
  Schema.Struct({ type: Schema.Literal("basic"), username: Schema.String, password: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("oauth2"),
    client_id: Schema.String.pipe(Schema.minLength(1)),
    client_secret: Schema.String,
    scopes: Schema.optional(Schema.Array(Schema.String)),
    token_endpoint_auth_method: Schema.optional(Schema.Literal("client_secret_basic", "client_secret_post"))
      .annotations({
        description: "How the client authenticates at the token endpoint (RFC 7591 names): `client_secret_basic` " +
          "(the default: an HTTP Basic header) or `client_secret_post` (client_id and client_secret in the form), " +
          "for providers that accept only the latter."
      })
  })
).annotations({
  identifier: "Credentials",
  description:
    "Where an API key goes (header, query or cookie, and its name) comes from the connector's security scheme."
})
export type Credentials = typeof Credentials.Type

export const CreateConnection = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  access_scope: Schema.optionalWith(AccessScope, { default: () => "organizational" as const }),
  credentials: Schema.optionalWith(Credentials, { default: () => ({ type: "none" as const }) }),
  server_url: Schema.optional(Schema.String).annotations({
    description: "Base URL for this connection only (e.g. the generic HTTP connector's target)."
  })
}).annotations({ identifier: "CreateConnection", ...requestBody })
export type CreateConnection = typeof CreateConnection.Type

export const UpdateConnection = Schema.Struct({
  name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  credentials: Schema.optional(Credentials),
  server_url: Schema.optional(Schema.NullOr(Schema.String))
}).annotations({ identifier: "UpdateConnection", ...requestBody })
export type UpdateConnection = typeof UpdateConnection.Type

/** Spec 2.4. */
export class Operation extends Schema.Class<Operation>("Operation")({
  id: Schema.String,
  operationId: Schema.String,
  path: Schema.String,
  method: Schema.String.annotations({ description: "Lower-case HTTP method of the target API." }),
  pretty_name: Schema.String,
  pretty_description: Schema.String
}) {}

/** Spec 2.5. */
export const OperationSchema = Schema.Struct({
  input: Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
    description: "JSON Schema with the groups `body_params`, `query_params`, `path_params` (and `headers`)."
  })
}).annotations({ identifier: "OperationSchema" })

/** An HTTP header name (RFC 9110 token): anything else could not be sent, and was a 502 instead of a 400. */
const HeaderName = Schema.String.pipe(
  Schema.pattern(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, {
    message: () => "a header name is letters, digits and !#$%&'*+.^_`|~- (no spaces, not empty)"
  })
)
/** A header value HTTP can carry: tab, visible ASCII and Latin-1, no line breaks or other control characters. */
const HeaderValue = Schema.String.pipe(
  Schema.pattern(/^[\t\x20-\x7e\x80-\xff]*$/, {
    message: () => "a header value holds no line breaks, control characters or characters beyond Latin-1"
  })
)

/** Spec 4.5: the only accepted top-level fields. */
export const InvokeOperation = Schema.Struct({
  body_params: Schema.optional(Schema.Unknown).annotations({ description: "JSON body sent to the target API." }),
  query_params: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "Query parameters of the operation, by name."
  }),
  path_params: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })).annotations({
    description: "Path parameters of the operation, by name (e.g. `{\"petId\": \"7\"}` for `/pets/{petId}`)."
  }),
  headers: Schema.optional(Schema.Record({ key: HeaderName, value: HeaderValue })).annotations({
    description: "Extra headers for the target API (the connection's auth headers cannot be overridden)."
  })
}).annotations({ identifier: "InvokeOperation", ...requestBody })
export type InvokeOperation = typeof InvokeOperation.Type

export const CatalogPage = Schema.Struct({
  items: Schema.Array(Connector),
  total: Schema.Int,
  next_cursor: Schema.NullOr(Schema.String).annotations({ description: "Pass as `cursor` for the next page." })
}).annotations({ identifier: "CatalogPage" })
