import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AuditExportParams, AuditListParams, AuditPage } from "./Audit.js"
import { BadRequestWire, ForbiddenWire } from "./Errors.js"
import { Authentication } from "./Security.js"

export class AuditApi extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("listAuditEvents", "/audit-logs")
      .setUrlParams(AuditListParams)
      .addSuccess(AuditPage)
      .annotate(OpenApi.Description, "The organization's audit log, newest first (Admin and above).")
  )
  .add(
    HttpApiEndpoint.get("exportAuditEvents", "/audit-logs/export")
      .setUrlParams(AuditExportParams)
      .addSuccess(Schema.String.annotations({ description: "The events, oldest first, streamed." }))
      .annotate(
        OpenApi.Description,
        "Export the whole range that matches, oldest first, as CSV, a JSON array or NDJSON (Admin and above)."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Audit log")
{}
