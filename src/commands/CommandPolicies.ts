import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import {
  type CheckCommand,
  type CommandDecision,
  CommandPolicy,
  type CommandPolicyInput
} from "../../schema/Commands.js"
import { NotFound } from "../../schema/Errors.js"
import type { AgentId } from "../../schema/Ids.js"
import { Policy as AccessPolicy } from "../../schema/Policy.js"
import type { Principal } from "../../schema/Security.js"
import { AgentRepo } from "../agents/AgentRepo.js"
import { mayUse } from "../agents/Agents.js"
import { actorOf, AuditLog } from "../audit/AuditLog.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { transactionIn } from "../db/Transaction.js"
import { requirePermission } from "../identity/IdentityPolicy.js"
import { sameList } from "../support/Lists.js"
import { judgeCommand, type Verdict } from "./CommandJudge.js"
import { CommandPolicyRepo, type CommandPolicyRow } from "./CommandPolicyRepo.js"
import type { Policy } from "./PolicyMatch.js"

/** An agent without a policy runs no command: nothing is allowed that nobody allowed. */
export const DEFAULT_POLICY: Policy = { default_action: "deny", rules: [] }

const present = (agentId: AgentId, row: CommandPolicyRow | undefined) =>
  new CommandPolicy({
    agent_id: agentId,
    default_action: row?.default_action ?? DEFAULT_POLICY.default_action,
    rules: row?.rules ?? [],
    is_default: row === undefined,
    updated_at: row?.updated_at ?? null
  })

/**
 * Gated shell commands (issue 25, spec 5.3): each agent's command policy, and the check a coding-agent
 * runtime makes before it runs shell text. Anyone who may use the agent reads the policy and checks
 * commands; Builders and above change it. `require_approval` opens an approval request of kind `command`
 * in the approvals inbox; every decision is recorded, in the task's thread or in the audit log.
 */
export class CommandPolicies extends Effect.Service<CommandPolicies>()("commands/CommandPolicies", {
  effect: Effect.gen(function*() {
    const repo = yield* CommandPolicyRepo
    const agents = yield* AgentRepo
    const audit = yield* AuditLog
    const transaction = transactionIn(yield* SqlClient.SqlClient)
    // a command waits for its decision as long as a tool call does (SWITCHYARD_APPROVAL_TIMEOUT)
    const timeout = (yield* SwitchyardConfig).approvalTimeout

    /** The agent, if it is one of the organization's that the principal may use; else a 404 naming it. */
    const usableAgent = (principal: Principal, id: AgentId) =>
      (mayUse(principal, id) ? agents.find(principal.organizationId, id) : Effect.succeed(undefined)).pipe(
        Effect.flatMap((row) => row === undefined ? Effect.fail(NotFound.of("Agent", id)) : Effect.succeed(row))
      )

    const get = Effect.fn("CommandPolicies.get")(function*(principal: Principal, agentId: AgentId) {
      yield* usableAgent(principal, agentId)
      return present(agentId, yield* repo.find(principal.organizationId, agentId))
    })

    const put = Effect.fn("CommandPolicies.put")(
      function*(principal: Principal, agentId: AgentId, input: CommandPolicyInput) {
        yield* requirePermission(principal, AccessPolicy.changeCommandPolicies)
        const rules = input.rules.map((r) => ({ pattern: r.pattern.trim().replace(/\s+/g, " "), action: r.action }))
        return yield* transaction(Effect.gen(function*() {
          // the agent's row locked from the read of the policy to its write (there may be no policy row to
          // lock yet): two PUTs at once each record, as their `before`, the policy the other left
          const agent = mayUse(principal, agentId)
            ? yield* agents.find(principal.organizationId, agentId, true)
            : undefined
          if (agent === undefined) return yield* NotFound.of("Agent", agentId)
          const before = yield* repo.find(principal.organizationId, agentId)
          // the policy it holds already: not written (`updated_at` stays), nothing audited
          if (
            before !== undefined && before.default_action === input.default_action &&
            sameList(before.rules, rules, (r, s) => r.pattern === s.pattern && r.action === s.action)
          ) return present(agentId, before)
          const row = yield* repo.put(principal.organizationId, agentId, {
            default_action: input.default_action,
            rules
          }, actorOf(principal))
          yield* audit.record(principal, {
            action: "UPDATE_COMMAND_POLICY",
            targets: [{ type: "agent", id: agentId, name: agent.name }],
            details: {
              before: before === undefined ? null : { default_action: before.default_action, rules: before.rules },
              after: { default_action: row.default_action, rules: row.rules }
            }
          })
          return present(agentId, row)
        }))
      }
    )

    /** Judges the text; a fault of the reader itself denies (and is logged), never allows. */
    const verdictOf = (policy: Policy, command: string) =>
      Effect.tryPromise(() => judgeCommand(policy, command)).pipe(
        Effect.catchAll((e) =>
          Effect.as(
            Effect.logError("command check failed to read a command", e.error),
            {
              decision: "deny",
              rule: null,
              reason: "the command could not be read",
              commands: []
            } satisfies Verdict as Verdict
          )
        )
      )

    const check = Effect.fn("CommandPolicies.check")(
      function*(principal: Principal, agentId: AgentId, input: CheckCommand) {
        const agent = yield* usableAgent(principal, agentId)
        const taskId = input.task_id ?? null
        if (taskId !== null && !(yield* repo.taskOf(principal.organizationId, agentId, taskId))) {
          return yield* NotFound.of("Task", taskId)
        }
        const row = yield* repo.find(principal.organizationId, agentId)
        const verdict = yield* verdictOf(row ?? DEFAULT_POLICY, input.command)
        const checkId = Crypto.randomUUID()
        return yield* transaction(Effect.gen(function*() {
          const approvalId = verdict.decision === "require_approval"
            ? yield* repo.requestApproval({
              organizationId: principal.organizationId,
              agentId,
              taskId,
              arguments: { command: input.command, cwd: input.cwd ?? null, commands: verdict.commands }
            }, timeout)
            : undefined
          const decision: CommandDecision = {
            decision: verdict.decision === "require_approval" ? "pending" : verdict.decision,
            rule: verdict.rule,
            ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
            ...(approvalId === undefined ? {} : { approval_id: approvalId }),
            commands: verdict.commands
          }
          const record = {
            check_id: checkId,
            command: input.command,
            cwd: input.cwd ?? null,
            ...decision,
            approval_id: approvalId ?? null,
            by: actorOf(principal)
          }
          if (taskId !== null) yield* repo.appendCheck(taskId, checkId, record)
          else {
            yield* audit.record(principal, {
              action: "CHECK_COMMAND",
              outcome: decision.decision === "deny" ? "denied" : "success",
              targets: [
                { type: "agent", id: agentId, name: agent.name },
                ...(approvalId === undefined ? [] : [{ type: "approval", id: approvalId }])
              ],
              details: record
            })
          }
          return decision
        }))
      }
    )

    return { get, put, check } as const
  }),
  dependencies: [CommandPolicyRepo.Default, AgentRepo.Default, AuditLog.Default]
}) {}
