import { accessExamples } from "./examples/Access.js"
import { agentAndTaskExamples } from "./examples/AgentsAndTasks.js"
import { connectorExamples } from "./examples/Connectors.js"
import { identityExamples } from "./examples/Identity.js"
import { knowledgeExamples } from "./examples/Knowledge.js"
import { scheduleAndWebhookExamples } from "./examples/SchedulesAndWebhooks.js"
import { skillAndApprovalExamples } from "./examples/SkillsAndApprovals.js"
import type { OperationExample } from "./examples/Story.js"
import { systemExamples } from "./examples/System.js"
import { usageAuditAndCommandExamples } from "./examples/UsageAuditCommands.js"
import { workspaceExamples } from "./examples/Workspace.js"

export type { OperationExample } from "./examples/Story.js"

/**
 * Request and response examples of every operation with a JSON body, by operationId, as the document shows them
 * (`documentApi`). redocly.yaml makes an example that does not fit its schema a lint error, so one that
 * no longer fits the contract fails test/openapi/Lint.test.ts.
 *
 * They tell one story, so a reader can follow ids from one operation to the next: Ada, an Admin of Acme
 * Retail, imports an Orders API, connects it, gives a support agent a refund skill that asks for approval,
 * schedules a digest, and watches tasks, webhooks, usage and the audit log. One module per area in examples/,
 * the ids, times and response shapes they share in examples/Story.ts.
 */
export const operationExamples: Record<string, OperationExample> = {
  ...systemExamples,
  ...identityExamples,
  ...accessExamples,
  ...connectorExamples,
  ...agentAndTaskExamples,
  ...skillAndApprovalExamples,
  ...scheduleAndWebhookExamples,
  ...workspaceExamples,
  ...knowledgeExamples,
  ...usageAuditAndCommandExamples
}
