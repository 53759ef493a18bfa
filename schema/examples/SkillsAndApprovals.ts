import {
  adaId,
  agentId,
  approvalId,
  at,
  byAda,
  connectionId,
  created,
  ok,
  type OperationExample,
  page,
  refundTaskId
} from "./Story.js"

const skillId = "01a616e1-f480-48b5-8caf-962b465052db"

const refundAction = {
  connection_id: connectionId,
  operation_id: "createRefund",
  requires_approval: true,
  approval_condition: { argument: "body_params.amount", op: "gt", value: 100 }
}
const refundSkill = {
  name: "Refunds",
  description: "Refund an order; refunds above 100 USD wait for an Admin.",
  actions: [refundAction],
  visibility: "restricted",
  allowlist: [agentId]
}
const skill = (status: string, published_at: string | null) => ({
  id: skillId,
  ...refundSkill,
  owner_id: adaId,
  status,
  version: 1,
  created_at: at(14, "10:00:00"),
  updated_at: published_at ?? at(14, "10:00:00"),
  published_at
})
const publishedSkill = skill("published", at(14, "10:05:00"))

const approval = (status: string, decided: { at: string; reason: string } | null) => ({
  id: approvalId,
  task_id: refundTaskId,
  agent_id: agentId,
  skill_id: skillId,
  tool: "createRefund",
  arguments: { path_params: { id: "1234" }, body_params: { amount: 249.9 } },
  status,
  kind: "tool_call",
  requested_at: at(15, "09:12:05"),
  expires_at: at(16, "09:12:05"),
  decided_at: decided?.at ?? null,
  decided_by: decided === null ? null : byAda,
  reason: decided?.reason ?? null
})

export const approvedAt = at(15, "09:14:30")
export const approvalReason = "Parcel arrived damaged; photos in the ticket."

export const skillAndApprovalExamples: Record<string, OperationExample> = {
  createSkill: { request: refundSkill, response: created(skill("draft", null)) },
  publishSkill: { response: ok(publishedSkill) },
  attachSkill: { response: ok({ skill: publishedSkill, attached_at: at(14, "10:06:00"), allowed: true }) },
  listApprovals: { response: ok(page(approval("pending", null))) },
  approveApproval: {
    request: { reason: approvalReason },
    response: ok(approval("approved", { at: approvedAt, reason: approvalReason }))
  }
}
