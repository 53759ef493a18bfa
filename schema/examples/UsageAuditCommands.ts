import { agent, updatedAgent } from "./AgentsAndTasks.js"
import { approvalReason, approvedAt } from "./SkillsAndApprovals.js"
import {
  agentId,
  approvalId,
  at,
  byAda,
  now,
  ok,
  type OperationExample,
  organizationId,
  page,
  refundTaskId
} from "./Story.js"

const commandApprovalId = "e6c91327-98a1-479a-9053-4ca3172ec384"

/** A day of one agent's usage (`group_by=agent`). */
const usageRow = (day: number, calls: number, cost_usd: number, tasks: number) => ({
  bucket_start: at(day, "00:00:00"),
  agent_id: agentId,
  model_calls: calls,
  input_tokens: calls * 1850,
  output_tokens: calls * 120,
  cached_tokens: calls * 600,
  cost_usd,
  tasks_completed: tasks,
  tasks_error: 0,
  tasks_cancelled: 0,
  task_duration_p50_ms: 4100,
  task_duration_p95_ms: 9800,
  connector_calls_2xx: tasks,
  connector_calls_3xx: 0,
  connector_calls_4xx: 0,
  connector_calls_5xx: 0,
  connector_calls_failed: 0
})

/** Two links of the organization's hash chain: each record's `prev_hash` is the one before's `hash`. */
const hashes = [
  "098922381e1cad712462d5a5f685036c1b4a97b7b57466bab2a292ad458e2258",
  "92bdfe5fab7563508b62fd242e918f1e2e3dd35d355950835024e22eae98cf18",
  "08985508a8775c71f7cd3c2758168fdd7a50145bf37b06e3bba79d9a9e7a0234"
]
interface AuditRecord {
  readonly id: string
  readonly time: string
  readonly action: string
  readonly targets: ReadonlyArray<{ type: string; id: string; name?: string }>
  readonly details: Record<string, unknown>
  readonly request_id: string
}
/** The `link`th record of the chain above: Ada, with her personal key and curl. */
const auditEvent = (link: 1 | 2, record: AuditRecord) => ({
  ...record,
  seq: 56 + link,
  organization_id: organizationId,
  actor: byAda,
  outcome: "success",
  ip: "203.0.113.7",
  user_agent: "curl/8.5.0",
  prev_hash: hashes[link - 1],
  hash: hashes[link]
})

const agentUpdated = auditEvent(2, {
  id: "cdaca101-23ff-45ec-9501-09d14fcd4465",
  time: updatedAgent.updated_at,
  action: "UPDATE_AGENT",
  targets: [{ type: "agent", id: agentId, name: agent.name }],
  details: { changed: ["max_steps"] },
  request_id: "1a9e4c7b-2d5f-4e8a-b3c6-9f0d2e7a5b41"
})
const refundApproved = auditEvent(1, {
  id: "c615aaaf-d78b-4c5f-80d0-300244eab44f",
  time: approvedAt,
  action: "APPROVE_TOOL_CALL",
  targets: [{ type: "approval", id: approvalId, name: "createRefund" }, { type: "task", id: refundTaskId }],
  details: { reason: approvalReason },
  request_id: "7d3f0c2a-5b1e-4f8d-9a6c-2e4b8d1f0a3c"
})

const judged = (words: ReadonlyArray<string>, decision: string, rule: string) => ({ words, decision, rule })
const commandPolicy = {
  default_action: "deny",
  rules: [
    { pattern: "npm run *", action: "allow" },
    { pattern: "git push *", action: "require_approval" },
    { pattern: "rm *", action: "deny" }
  ]
}

const checkedCommand = { command: "npm run build && git push origin main", cwd: "/workspace/shop" }
const checkedWords = [
  judged(["npm", "run", "build"], "allow", "npm run *"),
  judged(["git", "push", "origin", "main"], "require_approval", "git push *")
]
const storedPolicy = { agent_id: agentId, ...commandPolicy, is_default: false, updated_at: at(14, "15:00:00") }

export const usageAuditAndCommandExamples: Record<string, OperationExample> = {
  getUsage: {
    response: ok({
      from: "2025-12-16T00:00:00.000000Z",
      to: now,
      bucket: "day",
      group_by: ["agent"],
      rows: [usageRow(14, 12, 0.97, 5), usageRow(15, 9, 0.87, 4)],
      budgets: [{
        agent_id: agentId,
        agent_name: agent.name,
        period: "month",
        period_start: at(1, "00:00:00"),
        limit_usd: 50,
        spent_usd: 1.84,
        exhausted: false
      }]
    })
  },
  listAuditEvents: { response: ok(page(agentUpdated, refundApproved)) },
  // oldest first, as the export writes them
  exportAuditEvents: { response: ok([refundApproved, agentUpdated]) },
  putCommandPolicy: { request: commandPolicy, response: ok(storedPolicy) },
  getCommandPolicy: { response: ok(storedPolicy) },
  checkCommand: {
    request: checkedCommand,
    response: ok({ decision: "pending", rule: "git push *", approval_id: commandApprovalId, commands: checkedWords })
  },
  // the push the check above asked about, checked outside a task: no task, no skill
  rejectApproval: {
    request: { reason: "Pushes to main go through a pull request." },
    response: ok({
      id: commandApprovalId,
      task_id: null,
      agent_id: agentId,
      skill_id: null,
      tool: "shell",
      arguments: { ...checkedCommand, commands: checkedWords },
      status: "rejected",
      kind: "command",
      requested_at: at(15, "11:50:00"),
      expires_at: at(16, "11:50:00"),
      decided_at: at(15, "11:52:00"),
      decided_by: byAda,
      reason: "Pushes to main go through a pull request."
    })
  }
}
