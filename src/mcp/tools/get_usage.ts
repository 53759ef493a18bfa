import { Effect } from "effect"
import { UsageFilters, UsageReport } from "../../../schema/Usage.js"
import { Usage } from "../../usage/Usage.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_usage",
  description: "Model tokens and cost, tasks by final status with duration p50/p95, and connector calls by status " +
    "class, per UTC hour, day or month, optionally grouped; with budgets against their caps (GET /v1/usage). " +
    "Admins see the organization's usage, others their own.",
  input: UsageFilters,
  output: UsageReport,
  annotations: {
    title: "Get usage",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (filters, { caller }) => Effect.flatMap(Usage, (usage) => usage.report(caller.principal, filters))
})
