import type { AgentId } from "../../schema/Ids.js"
import { holds, Policy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { mayUse } from "../agents/Agents.js"
import type { EventRecord } from "./EventRepo.js"

/**
 * Which events a caller may see, by the rules of the reads they stand for: a task's events (task.*,
 * approval.*) as the task (Tasks.ts: any member, for the agents the key may use); a connection's as the
 * connection (organizational ones for everyone, a personal one for its owner); audit records as the audit
 * log (Admin and above). A key limited to agents sees only those agents' events: everything else looks absent.
 */
export const visibleTo = (principal: Principal) => (e: EventRecord): boolean => {
  if (e.agentId !== null) return mayUse(principal, e.agentId as AgentId)
  if (principal.agentIds !== null) return false
  if (e.type === "audit.recorded") return holds(principal.role, Policy.readAuditLog)
  if (e.type.startsWith("connection.")) return e.ownerUserId === null || e.ownerUserId === principal.userId
  return false
}

/** Everything `visibleTo` depends on: two principals with the same key see the same events. */
export const visibilityKey = (principal: Principal): string =>
  JSON.stringify([
    principal.agentIds === null ? null : [...principal.agentIds].sort(),
    holds(principal.role, Policy.readAuditLog),
    principal.userId
  ])

/**
 * Why the caller will never be shown any event of this type (the rules of `visibleTo`), or undefined when
 * some may reach them: a stream asking only for what it cannot see would wait forever in silence.
 */
export const unseenType = (principal: Principal, type: string): string | undefined => {
  if (!type.startsWith("audit.") && !type.startsWith("connection.")) return undefined
  if (principal.agentIds !== null) return "a key limited to agents sees only their task and approval events"
  return type === "audit.recorded" && !holds(principal.role, Policy.readAuditLog)
    ? "audit records are for Admins and above, as GET /v1/audit-logs"
    : undefined
}
