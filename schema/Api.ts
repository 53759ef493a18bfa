import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { GroupsApi } from "./AccessApi.js"
import { AgentsApi } from "./AgentsApi.js"
import { AuditApi } from "./AuditApi.js"
import { CommandsApi } from "./CommandsApi.js"
import { ToolsApi } from "./ConnectorsApi.js"
import { BadRequestWire, ConflictWire, ForbiddenWire, NotFoundWire, ServiceUnavailableWire } from "./Errors.js"
import { EventsApi } from "./EventsApi.js"
import { FilesApi } from "./FilesApi.js"
import { FunctionsApi } from "./FunctionsApi.js"
import {
  ApiKey,
  ApiKeyList,
  ApiKeyListParams,
  CreateApiKey,
  CreatedApiKey,
  CreateMember,
  Me,
  Member,
  MemberList,
  MemberListParams,
  UpdateMember
} from "./Identity.js"
import { ApiKeyId, UserId } from "./Ids.js"
import { KnowledgeBasesApi } from "./KnowledgeBasesApi.js"
import { OAuthApi } from "./OAuth.js"
import { documentApi } from "./OpenApiDocument.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { SchedulesApi } from "./SchedulesApi.js"
import { Authentication } from "./Security.js"
import { ApprovalsApi, SkillsApi } from "./SkillsApi.js"
import { SsoApi } from "./SsoApi.js"
import { UsageApi } from "./UsageApi.js"
import { WebhooksApi } from "./WebhooksApi.js"

export class Readiness extends Schema.Class<Readiness>("Readiness")({
  status: Schema.Literal("ready"),
  node: Schema.String.annotations({ description: "This node's runner address." }),
  shards_owned: Schema.Int,
  shards_total: Schema.Int
}) {}

export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz")
      .annotateContext(operation({ summary: "Liveness probe", permission: null, errors: [] }))
      .addSuccess(Schema.Struct({ status: Schema.Literal("ok") }).annotations({ identifier: "Health" }))
      .annotate(OpenApi.Description, "Liveness: the process is up.")
  )
  .add(
    HttpApiEndpoint.get("readyz", "/readyz")
      .annotateContext(operation({ summary: "Readiness probe", permission: null, errors: [] }))
      .addSuccess(Readiness)
      .addError(ServiceUnavailableWire)
      .annotate(
        OpenApi.Description,
        "Readiness: the database is reachable, migrations are applied, and this node's runner is registered and owns shards."
      )
  )
  .annotate(OpenApi.Title, "System")
  .annotate(
    OpenApi.Description,
    "Probes for load balancers and orchestrators; no API key."
  )
{}

export class IdentityApi extends HttpApiGroup.make("identity")
  .add(
    HttpApiEndpoint.get("me", "/me")
      .annotateContext(operation({ summary: "Who is calling", permission: Policy.anyMember, errors: ["not_found"] }))
      .addSuccess(Me)
      .annotate(OpenApi.Description, "The caller: organization, user (for personal keys), key and role.")
  )
  .add(
    HttpApiEndpoint.get("listMembers", "/members")
      .annotateContext(
        operation({ summary: "List members", permission: Policy.listMembers, errors: ["invalid_cursor"] })
      )
      .setUrlParams(MemberListParams)
      .addSuccess(MemberList)
      .annotate(OpenApi.Description, "Members of the caller's organization.")
  )
  .add(
    HttpApiEndpoint.post("createMember", "/members")
      .annotateContext(
        operation({
          summary: "Add a member",
          permission: Policy.addMembers,
          errors: ["already_member"],
          access: "Nobody grants a role above their own; only a Super admin grants Super admin."
        })
      )
      .setPayload(CreateMember)
      .addSuccess(Member, { status: 201 })
      .addError(ConflictWire)
      .annotate(OpenApi.Description, "Add a person to the organization.")
  )
  .add(
    HttpApiEndpoint.patch("updateMember", "/members/:user_id")
      .annotateContext(
        operation({
          summary: "Change a member's role",
          permission: Policy.changeMemberRoles,
          errors: ["last_super_admin"],
          access:
            "Nobody grants a role above their own or changes someone above it; only a Super admin grants or removes Super admin."
        })
      )
      .setPath(Schema.Struct({ user_id: UserId }))
      .setPayload(UpdateMember)
      .addSuccess(Member)
      .addError(ConflictWire)
      .annotate(
        OpenApi.Description,
        "Change a member's role. " +
          "409 `last_super_admin` when it would leave the organization without one."
      )
  )
  .add(
    HttpApiEndpoint.del("removeMember", "/members/:user_id")
      .annotateContext(
        operation({
          summary: "Remove a member",
          permission: Policy.removeMembers,
          errors: ["last_super_admin"],
          access: "Nobody removes someone whose role is above their own."
        })
      )
      .setPath(Schema.Struct({ user_id: UserId }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(ConflictWire)
      .annotate(
        OpenApi.Description,
        "Remove a person from the organization: their personal API keys and MCP authorizations here are revoked, " +
          "their personal connections deleted (credentials erased), and they leave its groups."
      )
  )
  .add(
    HttpApiEndpoint.get("listApiKeys", "/api-keys")
      .annotateContext(
        operation({
          summary: "List API keys",
          permission: Policy.anyMember,
          errors: ["invalid_cursor"],
          access: "Admins and above see organization keys and every personal key; others their own personal keys."
        })
      )
      .setUrlParams(ApiKeyListParams)
      .addSuccess(ApiKeyList)
      .annotate(
        OpenApi.Description,
        "API keys of the organization."
      )
  )
  .add(
    HttpApiEndpoint.post("createApiKey", "/api-keys")
      .annotateContext(
        operation({
          summary: "Create an API key",
          permission: Policy.anyMember,
          errors: ["bad_request", "forbidden", "unknown_agent", "not_found"],
          access:
            "Organization keys, and personal keys for other members, need Admin or above; a key's role is never above the caller's. " +
            "A key limited to agents creates only keys limited to agents among its own, and no personal keys for others."
        })
      )
      .setPayload(CreateApiKey)
      .addSuccess(CreatedApiKey, { status: 201 })
      .annotate(OpenApi.Description, "Create an API key. The secret is returned once, in `api_key`.")
  )
  .add(
    HttpApiEndpoint.del("revokeApiKey", "/api-keys/:key_id")
      .annotateContext(
        operation({
          summary: "Revoke an API key",
          permission: Policy.anyMember,
          errors: ["forbidden"],
          access:
            "Admins and above revoke any key whose role is not above theirs; others their own personal keys (another's key is a 404)."
        })
      )
      .setPath(Schema.Struct({ key_id: ApiKeyId }))
      .addSuccess(ApiKey)
      .annotate(OpenApi.Description, "Revoke an API key. Requests with it fail with 401 from then on.")
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Identity and API keys")
  .annotate(
    OpenApi.Description,
    "The caller, the organization's members and roles, and API keys (docs/guides/access-control.md)."
  )
{}

/** Every group of the REST API, before the document transform. */
const ApiGroups = HttpApi.make("switchyard")
  .add(SystemApi)
  .add(IdentityApi)
  .add(ToolsApi)
  .add(AgentsApi)
  .add(OAuthApi)
  .add(GroupsApi)
  .add(AuditApi)
  .add(SkillsApi)
  .add(ApprovalsApi)
  .add(SsoApi)
  .add(SchedulesApi)
  .add(FilesApi)
  .add(FunctionsApi)
  .add(KnowledgeBasesApi)
  .add(EventsApi)
  .add(WebhooksApi)
  .add(UsageApi)
  .add(CommandsApi)
  .annotate(OpenApi.Title, "Switchyard API")
  .annotate(OpenApi.Description, "Self-hostable platform for AI agents. Every REST call carries `x-api-key`.")

/**
 * The REST API: the contract of docs/spec/agent-platform-api.md, whose sections comments here and in src/
 * cite as "spec 4.6" and the like.
 */
export class Api extends ApiGroups
  // one transform makes both the served /openapi.json and the committed openapi.json (schema/OpenApiDocument.ts)
  .annotate(OpenApi.Transform, documentApi(ApiGroups))
{}
