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
const lookupSkillId = "6f4d2b8e-0a1c-4e3f-9d5b-7c8a9e0f1b2d"
/** A second agent of Acme Retail's, not on the refund skill's allowlist at first. */
const returnsAgentId = "a5c7e9f1-3b2d-4c6e-8f0a-9b1d3e5f7a2c"
const returnsTaskId = "c1e3a5f7-9b8d-4f2a-8c6e-0d2f4a6b8c1e"

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

/** After the violations below: the returns agent may hold the skill too. Then a second version. */
const sharedSkill = {
  ...publishedSkill,
  allowlist: [agentId, returnsAgentId],
  updated_at: at(15, "10:35:00")
}
const currentSkill = {
  ...sharedSkill,
  description: "Refund an order; refunds above 100 USD wait for an Admin, who reads the ticket first.",
  version: 2,
  updated_at: at(15, "10:40:00")
}

/** Published from a repository's switchyard.yaml (`publishManifest`), by an Admin: published at once. */
const lookupSkill = {
  id: lookupSkillId,
  name: "Order lookup",
  description: "Look up an order's status and shipment.",
  actions: [{ connection_id: connectionId, operation_id: "getOrder", requires_approval: false }],
  visibility: "organization",
  allowlist: [],
  owner_id: adaId,
  status: "published",
  version: 1,
  created_at: at(15, "10:50:00"),
  updated_at: at(15, "10:50:00"),
  published_at: at(15, "10:50:00")
}
const manifest = `version: 1
skills:
  - name: Order lookup
    description: Look up an order's status and shipment.
    visibility: organization
    actions:
      - connector: Orders
        connection: Orders (production)
        operation: getOrder
`

/** Under SERVICE_SKILL_VISIBILITY_MODE=report: the returns agent was given the refund skill, then used it. */
const violation = (id: string, kind: string, task_id: string | null, tool: string | null, time: string) => ({
  id,
  skill_id: skillId,
  agent_id: returnsAgentId,
  task_id,
  kind,
  tool,
  mode: "report",
  at: at(15, time)
})

export const approvedAt = at(15, "09:14:30")
export const approvalReason = "Parcel arrived damaged; photos in the ticket."

export const skillAndApprovalExamples: Record<string, OperationExample> = {
  createSkill: { request: refundSkill, response: created(skill("draft", null)) },
  publishSkill: { response: ok(publishedSkill) },
  attachSkill: { response: ok({ skill: publishedSkill, attached_at: at(14, "10:06:00"), allowed: true }) },
  listSkills: { response: ok(page(lookupSkill, currentSkill)) },
  getSkill: { response: ok(currentSkill) },
  setSkillAccess: {
    request: { visibility: "restricted", allowlist: sharedSkill.allowlist },
    response: ok(sharedSkill)
  },
  updateSkill: { request: { description: currentSkill.description }, response: ok(currentSkill) },
  publishManifest: {
    request: { manifest },
    response: ok({
      skills: [{ name: lookupSkill.name, id: lookupSkillId, outcome: "created", status: "published", version: 1 }],
      connectors: []
    })
  },
  archiveSkill: {
    // the agent has getOrder among its own skills already
    response: ok({ ...lookupSkill, status: "archived", updated_at: at(16, "09:00:00") })
  },
  listSkillViolations: {
    response: ok(page(
      violation("18", "use", returnsTaskId, "createRefund", "08:41:12"),
      violation("17", "attach", null, null, "08:30:00")
    ))
  },
  listAgentSkills: { response: ok([{ skill: currentSkill, attached_at: at(14, "10:06:00"), allowed: true }]) },
  getApproval: { response: ok(approval("approved", { at: approvedAt, reason: approvalReason })) },
  listApprovals: { response: ok(page(approval("pending", null))) },
  approveApproval: {
    request: { reason: approvalReason },
    response: ok(approval("approved", { at: approvedAt, reason: approvalReason }))
  }
}
