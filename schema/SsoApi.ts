import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { BadRequestWire, ForbiddenWire, NotFoundWire, UnprocessableWire } from "./Errors.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"
import { PutSsoSettings, SsoSettings } from "./Sso.js"

/** The organization's OIDC single sign-on (Admin and above; every change is audited). */
export class SsoApi extends HttpApiGroup.make("sso")
  .add(
    HttpApiEndpoint.get("getSso", "/sso")
      .annotateContext(
        operation({
          summary: "Get single sign-on settings",
          permission: Policy.manageSingleSignOn,
          errors: ["not_found"]
        })
      )
      .addSuccess(SsoSettings)
      .annotate(OpenApi.Description, "The organization's single sign-on settings; 404 when none are set.")
  )
  .add(
    HttpApiEndpoint.put("putSso", "/sso")
      .annotateContext(
        operation({
          summary: "Set single sign-on",
          permission: Policy.manageSingleSignOn,
          errors: ["unknown_group", "sso_issuer_unreachable", "sso_issuer_not_oidc"]
        })
      )
      .setPayload(PutSsoSettings)
      .addSuccess(SsoSettings)
      .annotate(
        OpenApi.Description,
        "Set the OIDC single sign-on settings. The issuer is discovered first: 422 `sso_issuer_unreachable` or " +
          "`sso_issuer_not_oidc` when it cannot be used. 400 `unknown_group` for a mapping to no group of this " +
          "organization. `enabled: false` ends the sessions opened through single sign-on."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteSso", "/sso")
      .annotateContext(
        operation({ summary: "Remove single sign-on", permission: Policy.manageSingleSignOn, errors: ["not_found"] })
      )
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Remove single sign-on. People keep their memberships and groups; the sessions opened through it end."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(UnprocessableWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Single sign-on")
  .annotate(
    OpenApi.Description,
    "OpenID Connect single sign-on for the organization (docs/guides/access-control.md)."
  )
{}
