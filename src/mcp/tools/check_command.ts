import { Effect, Schema } from "effect"
import { CheckCommand, CommandDecision } from "../../../schema/Commands.js"
import { AgentId } from "../../../schema/Ids.js"
import { CommandPolicies } from "../../commands/CommandPolicies.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "check_command",
  description: "Judge shell text against the agent's command policy before running it (POST " +
    "/v1/agents/{agent_id}/commands/check). Every simple command in it is judged (pipes, lists, substitutions, " +
    "`sh -c`/`eval` strings, env/sudo/xargs wrappers, redirections to files); the strictest decides: `allow`, " +
    "`deny`, or `pending` with an `approval_id` a person decides. Unreadable text is denied. Recorded in the " +
    "task's thread with `task_id`, else in the audit log.",
  input: Schema.Struct({ agent_id: AgentId, ...CheckCommand.fields }),
  output: CommandDecision,
  annotations: {
    title: "Check a shell command",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false
  },
  run: ({ agent_id, ...input }, { caller }) =>
    Effect.flatMap(CommandPolicies, (policies) => policies.check(caller.principal, agent_id, input))
})
