import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { BadRequestWire, ForbiddenWire, NotFoundWire } from "./Errors.js"
import { ListOf } from "./Identity.js"
import { UserId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"
import { Timestamp } from "./Timestamp.js"

export const OAuthGrantId = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9]{12}$/),
  Schema.brand("OAuthGrantId"),
  Schema.annotations({ description: "Identifier of an authorization you gave a client (a consent)." })
)
export type OAuthGrantId = typeof OAuthGrantId.Type

/** RFC 7591 registration request; unknown members are ignored, as the RFC asks. */
export const ClientRegistrationRequest = Schema.Struct({
  redirect_uris: Schema.NonEmptyArray(Schema.String).annotations({
    description: "Exact redirect URIs: https, or http on a loopback address (127.0.0.1, [::1], localhost)."
  }),
  client_name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  client_uri: Schema.optional(Schema.String.pipe(Schema.maxLength(2000))),
  token_endpoint_auth_method: Schema.optional(Schema.Literal("none", "client_secret_basic", "client_secret_post")),
  grant_types: Schema.optional(Schema.Array(Schema.Literal("authorization_code", "refresh_token"))),
  response_types: Schema.optional(Schema.Array(Schema.Literal("code"))),
  scope: Schema.optional(Schema.String.pipe(Schema.maxLength(1000)))
}).annotations({ identifier: "ClientRegistrationRequest" })
export type ClientRegistrationRequest = typeof ClientRegistrationRequest.Type

/** Spec 5.2 (c): a Client ID Metadata Document has the registration fields plus its own URL as `client_id`. */
export const ClientMetadataDocument = Schema.Struct({
  ...ClientRegistrationRequest.fields,
  client_id: Schema.String
}).annotations({ identifier: "ClientMetadataDocument" })

export class OAuthAuthorization extends Schema.Class<OAuthAuthorization>("OAuthAuthorization")({
  id: OAuthGrantId,
  user_id: UserId.annotations({ description: "The member who authorized the client." }),
  client_id: Schema.String.annotations({ description: "The client's id (a URL for metadata-document clients)." }),
  client_name: Schema.NullOr(Schema.String),
  resource: Schema.String.annotations({ description: "The MCP endpoint its tokens are valid for." }),
  scopes: Schema.Array(Schema.String),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
}) {}

export class OAuthApi extends HttpApiGroup.make("oauth")
  .add(
    HttpApiEndpoint.get("listAuthorizations", "/oauth/authorizations")
      .annotateContext(
        operation({
          summary: "List MCP authorizations",
          permission: Policy.anyMember,
          errors: ["personal_key_required", "forbidden"],
          access: "Yours, with a personal key; another member's (`user_id`) for Admins and above, with any key " +
            "of the whole organization."
        })
      )
      .setUrlParams(Schema.Struct({
        user_id: Schema.optional(UserId).annotations({
          description: "Another member's authorizations (Admin+); without it, your own."
        })
      }))
      .addSuccess(ListOf(OAuthAuthorization, "OAuthAuthorizationList"))
      .annotate(
        OpenApi.Description,
        "MCP clients a member authorized in this organization, newest first, revoked ones included: yours, or " +
          "with `user_id` another member's (Admin+, as every member's API keys are theirs to see)."
      )
  )
  .add(
    HttpApiEndpoint.del("revokeAuthorization", "/oauth/authorizations/:authorization_id")
      .annotateContext(
        operation({
          summary: "Revoke an MCP authorization",
          permission: Policy.anyMember,
          errors: ["personal_key_required", "forbidden"],
          access: "Your own; another member's for Admins and above (not of a member above their role), with any " +
            "key of the whole organization."
        })
      )
      .setPath(Schema.Struct({ authorization_id: OAuthGrantId }))
      .addSuccess(OAuthAuthorization)
      .annotate(
        OpenApi.Description,
        "Revoke an authorization: its access and refresh tokens stop working (at once on this node, within " +
          "SWITCHYARD_API_KEY_CACHE_TTL on the others)."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "MCP authorizations")
  .annotate(
    OpenApi.Description,
    "The MCP clients a person authorized through OAuth (docs/guides/mcp.md)."
  )
{}
