import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AUDIT_CSV_COLUMNS, AuditEvent, AuditExportParams, AuditListParams, AuditPage } from "./Audit.js"
import { BadRequestWire, ForbiddenWire } from "./Errors.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"

/** The export's three bodies, one per `format`: the generator documents one content type per status. */
const exportFormats = (operation: Record<string, any>) => {
  const ok = operation.responses["200"]
  const array = ok.content["application/json"].schema
  ok.description = "The matching events, oldest first, in the requested `format`."
  ok.content = {
    "application/json": { schema: { ...array, description: "`format=json` (default): one JSON array of events." } },
    "application/x-ndjson": {
      schema: {
        type: "string",
        description: "`format=ndjson`: one event a line, each a JSON object shaped as AuditEvent."
      }
    },
    "text/csv": {
      schema: {
        type: "string",
        description: `\`format=csv\`: RFC 4180, a header row, then one event a row. Columns: ${
          AUDIT_CSV_COLUMNS.join(", ")
        } (\`targets\` and \`details\` as JSON text).`
      }
    }
  }
  return operation
}

export class AuditApi extends HttpApiGroup.make("audit")
  .add(
    HttpApiEndpoint.get("listAuditEvents", "/audit-logs")
      .annotateContext(
        operation({
          summary: "List audit events",
          permission: Policy.readAuditLog,
          errors: ["invalid_cursor", "invalid_time_range"]
        })
      )
      .setUrlParams(AuditListParams)
      .addSuccess(AuditPage)
      .annotate(OpenApi.Description, "The organization's audit log, newest first.")
  )
  .add(
    HttpApiEndpoint.get("exportAuditEvents", "/audit-logs/export")
      .annotateContext(
        operation({
          summary: "Export audit events",
          permission: Policy.exportAuditLog,
          errors: ["invalid_time_range"]
        })
      )
      .setUrlParams(AuditExportParams)
      .addSuccess(Schema.Array(AuditEvent))
      .annotate(
        OpenApi.Description,
        "Export the whole range that matches, oldest first, as CSV, a JSON array or NDJSON. " +
          "`format` picks the body; each is sent as an attachment."
      )
      .annotate(OpenApi.Transform, exportFormats)
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Audit log")
  .annotate(
    OpenApi.Description,
    "The organization's tamper-evident audit log: every change and every refused request."
  )
{}
