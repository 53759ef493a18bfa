import { Effect, Schema } from "effect"
import { Approval, ApprovalId } from "../../../schema/Skills.js"
import { Approvals } from "../../skills/Approvals.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "decide_approval",
  description: "Approve or reject a tool call waiting for approval; the task then goes on (POST " +
    "/v1/approvals/{approval_id}/approve|reject; Admin+). A rejection and its reason are told to the model.",
  input: Schema.Struct({
    approval_id: ApprovalId,
    decision: Schema.Literal("approve", "reject"),
    reason: Schema.optional(Schema.String.pipe(Schema.maxLength(2000)))
  }),
  output: Approval,
  annotations: {
    title: "Approve or reject a tool call",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false
  },
  run: ({ approval_id, decision, reason }, { caller }) =>
    Effect.flatMap(
      Approvals,
      (approvals) =>
        (decision === "approve" ? approvals.approve : approvals.reject)(caller.principal, approval_id, reason)
    )
})
