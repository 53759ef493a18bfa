import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { BadRequestWire, ForbiddenWire, NotFoundWire } from "./Errors.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"
import { USAGE_CSV_COLUMNS, UsageParams, UsageReport } from "./Usage.js"

/** The report's two bodies, one per `format`: the generator documents one content type per status. */
const usageFormats = (operation: Record<string, any>) => {
  const ok = operation.responses["200"]
  const report = ok.content["application/json"].schema
  ok.description = "The usage in the range, by bucket and group, in the requested `format`."
  ok.content = {
    "application/json": { schema: { ...report, description: "`format=json` (default): the report." } },
    "text/csv": {
      schema: {
        type: "string",
        description: `\`format=csv\`: RFC 4180, a header row, then one row per bucket and group, as an attachment. ` +
          `Columns: ${USAGE_CSV_COLUMNS.join(", ")} (a dimension not grouped by is empty; no budgets).`
      }
    }
  }
  return operation
}

export class UsageApi extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("getUsage", "/usage")
      .annotateContext(
        operation({
          summary: "Report usage and cost",
          permission: Policy.anyMember,
          errors: ["invalid_time_range", "invalid_group_by", "forbidden", "not_found"],
          access: "Below Admin, only the caller's own usage (`user_id` their own or left out)."
        })
      )
      .setUrlParams(UsageParams)
      .addSuccess(UsageReport)
      .annotate(
        OpenApi.Description,
        "Model tokens and cost, tasks by final status with duration p50/p95, and connector calls by status " +
          "class, per UTC hour, day or month, grouped by agent, user, model, provider, connector or source; with " +
          "each budgeted agent's spend against its cap. Admins and above see the organization's usage; Builders " +
          "and Members their own (recorded under their user id); a key limited to agents, those agents'. 400 " +
          "`invalid_time_range` (`from` not before `to`, or too long a range) or `invalid_group_by`."
      )
      .annotate(OpenApi.Transform, usageFormats)
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Usage")
  .annotate(
    OpenApi.Description,
    "Tokens, cost, tasks and connector calls over time (docs/guides/usage.md)."
  )
{}
