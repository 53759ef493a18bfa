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
    // described as a property: a description on the type would stand in for its message
    decision: Schema.propertySignature(Schema.Literal("approve", "reject")).annotations({
      description: "Let the tool call run, or not."
    }),
    reason: Schema.optional(Schema.String.pipe(Schema.maxLength(2000))).annotations({
      description: "Why; a rejection's reason is told to the model."
    })
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
