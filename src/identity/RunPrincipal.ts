import type { AgentId, ApiKeyId, OrganizationId, UserId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"

/** What a task records of who invoked it. */
export interface TaskInvoker {
  readonly organization_id: OrganizationId
  readonly invoker_user_id: UserId | null
  readonly api_key_id: string | null
  /** Null: every agent (tasks made before the scope was kept have their own agent's). */
  readonly invoker_agent_ids: ReadonlyArray<AgentId> | null
}

/**
 * Who a task's run acts as when it calls out (connectors, the built-in Switchyard connector, a function's
 * calls): its invoker, never the agent's creator, as a Member, within the agents the invoker could reach. A
 * personal connection in an agent's skills stays its owner's, and a key limited to one agent reaches no other
 * through the run.
 */
export const runPrincipal = (task: TaskInvoker): Principal => ({
  organizationId: task.organization_id,
  userId: task.invoker_user_id,
  keyId: (task.api_key_id ?? "task") as ApiKeyId,
  role: "member",
  agentIds: task.invoker_agent_ids
})
