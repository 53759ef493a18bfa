import { PgClient } from "@effect/sql-pg"
import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import type { CommandAction } from "../../schema/Commands.js"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import type { ApprovalId } from "../../schema/Skills.js"
import type { PolicyRule } from "./PolicyMatch.js"

export interface CommandPolicyRow {
  readonly agent_id: AgentId
  readonly organization_id: OrganizationId
  readonly default_action: CommandAction
  readonly rules: ReadonlyArray<PolicyRule>
  readonly updated_at: Date
}

export interface CommandApprovalRequest {
  readonly organizationId: OrganizationId
  readonly agentId: AgentId
  readonly taskId: TaskId | null
  readonly arguments: unknown
}

/** Command policies, the thread events of checks, and command approval requests. A failed statement is a defect. */
export class CommandPolicyRepo extends Effect.Service<CommandPolicyRepo>()("commands/CommandPolicyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    const find = (organizationId: OrganizationId, agentId: AgentId) =>
      sql<CommandPolicyRow>`
        SELECT agent_id, organization_id, default_action, rules, updated_at FROM command_policies
        WHERE agent_id = ${agentId} AND organization_id = ${organizationId}`.pipe(
        Effect.map(([row]): CommandPolicyRow | undefined => row),
        Effect.orDie
      )

    const put = (
      organizationId: OrganizationId,
      agentId: AgentId,
      policy: { readonly default_action: CommandAction; readonly rules: ReadonlyArray<PolicyRule> },
      by: unknown
    ) =>
      sql<CommandPolicyRow>`
        INSERT INTO command_policies (agent_id, organization_id, default_action, rules, updated_by)
        VALUES (${agentId}, ${organizationId}, ${policy.default_action}, ${JSON.stringify(policy.rules)}::jsonb,
          ${JSON.stringify(by)}::jsonb)
        ON CONFLICT (agent_id) DO UPDATE SET default_action = excluded.default_action, rules = excluded.rules,
          updated_by = excluded.updated_by, updated_at = now()
        RETURNING agent_id, organization_id, default_action, rules, updated_at`.pipe(
        Effect.map(([row]) => row!),
        Effect.orDie
      )

    /** The agent's task in the organization, if it is one. */
    const taskOf = (organizationId: OrganizationId, agentId: AgentId, taskId: TaskId) =>
      sql<{ id: TaskId }>`
        SELECT id FROM tasks WHERE id = ${taskId} AND organization_id = ${organizationId} AND agent_id = ${agentId}`
        .pipe(Effect.map(([row]) => row !== undefined), Effect.orDie)

    /**
     * Appends a `command_check` event to the task's thread. Its step key is the check's own, so it is written
     * once; a race with another writer for the next `seq` is retried.
     */
    const appendCheck = (taskId: TaskId, checkId: string, data: unknown) =>
      sql<{ seq: number }>`
        INSERT INTO task_events (task_id, seq, type, step_key, data)
        SELECT ${taskId}, coalesce(max(seq), 0) + 1, 'command_check', ${`c:${checkId}`}, ${JSON.stringify(data)}::jsonb
        FROM task_events WHERE task_id = ${taskId}
        ON CONFLICT DO NOTHING RETURNING seq`.pipe(
        Effect.flatMap((rows) => rows.length > 0 ? Effect.void : Effect.fail("seq taken" as const)),
        Effect.retry({ times: 5 }),
        Effect.catchAll(() => Effect.dieMessage(`the thread of task ${taskId} took no event`)),
        Effect.orDie
      )

    /** A pending approval request of kind `command`, expiring after `timeout`. */
    const requestApproval = (r: CommandApprovalRequest, timeout: Duration.Duration) => {
      const id = Crypto.randomUUID() as ApprovalId
      return sql`
        INSERT INTO approvals (id, organization_id, task_id, step_key, agent_id, tool, arguments, status, expires_at,
          kind)
        VALUES (${id}, ${r.organizationId}, ${r.taskId}, ${`cmd:${id}`}, ${r.agentId}, 'shell',
          ${JSON.stringify(r.arguments)}::jsonb, 'pending', now() + make_interval(secs => ${
        Duration.toSeconds(timeout)
      }),
          'command')`.pipe(Effect.as(id), Effect.orDie)
    }

    return { find, put, taskOf, appendCheck, requestApproval } as const
  })
}) {}
