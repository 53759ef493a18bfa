import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { CheckCommand, CommandDecision, CommandPolicy, CommandPolicyInput } from "./Commands.js"
import { BadRequestWire, ForbiddenWire, NotFoundWire } from "./Errors.js"
import { AgentId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"

const AgentPath = Schema.Struct({ agent_id: AgentId })

/** Gated shell commands (spec 5.3): an agent's command policy, and the check a coding-agent runtime makes. */
export class CommandsApi extends HttpApiGroup.make("commands")
  .add(
    HttpApiEndpoint.get("getCommandPolicy", "/agents/:agent_id/command-policy")
      .annotateContext(operation({
        summary: "Get an agent's command policy",
        permission: Policy.anyMember,
        errors: [],
        access: "For an agent the key may use."
      }))
      .setPath(AgentPath)
      .addSuccess(CommandPolicy)
      .annotate(
        OpenApi.Description,
        "The agent's command policy (anyone who may use the agent). An agent without one denies every command: " +
          "`{default_action: \"deny\", rules: [], is_default: true}`."
      )
  )
  .add(
    HttpApiEndpoint.put("putCommandPolicy", "/agents/:agent_id/command-policy")
      .annotateContext(operation({
        summary: "Set an agent's command policy",
        permission: Policy.changeCommandPolicies,
        errors: [],
        access: "For an agent the key may use."
      }))
      .setPath(AgentPath)
      .setPayload(CommandPolicyInput)
      .addSuccess(CommandPolicy)
      .annotate(
        OpenApi.Description,
        "Replace the agent's command policy (Builder+, for an agent the key may use). Audited " +
          "(`UPDATE_COMMAND_POLICY`). At most 200 rules, patterns of 1-500 characters."
      )
  )
  .add(
    HttpApiEndpoint.post("checkCommand", "/agents/:agent_id/commands/check")
      .annotateContext(operation({
        summary: "Check a shell command",
        permission: Policy.anyMember,
        errors: [],
        access: "For an agent the key may use."
      }))
      .setPath(AgentPath)
      .setPayload(CheckCommand)
      .addSuccess(CommandDecision)
      .annotate(
        OpenApi.Description,
        "Judge shell text before running it (anyone who may use the agent). It is parsed as bash and every " +
          "simple command in it is judged (lists, pipes, subshells, substitutions, wrappers such as env/sudo/xargs, " +
          "`sh -c` and `eval` strings, output redirections to files); the strictest decides. Text that cannot be " +
          "read is denied. `pending` opens an approval request (`approval_id`): wait for it with " +
          "`GET /v1/approvals/{approval_id}?wait=30`. Every decision is recorded: in the task's thread with " +
          "`task_id`, else in the audit log (`CHECK_COMMAND`)."
      )
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Commands")
  .annotate(
    OpenApi.Description,
    "The gate for shell commands of coding-agent runtimes: the organization's policy, and checks that parse a " +
      "command and judge each simple command in it (allow, deny, or hold for approval)."
  )
{}
