import { Effect, Schema } from "effect"
import { CommandPolicy } from "../../../schema/Commands.js"
import { AgentId } from "../../../schema/Ids.js"
import { CommandPolicies } from "../../commands/CommandPolicies.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_command_policy",
  description: "The agent's command policy: its rules in order (the first match decides) and the default action " +
    "(GET /v1/agents/{agent_id}/command-policy). Without a policy every command is denied.",
  input: Schema.Struct({ agent_id: AgentId }),
  output: CommandPolicy,
  annotations: {
    title: "Get a command policy",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ agent_id }, { caller }) =>
    Effect.flatMap(CommandPolicies, (policies) => policies.get(caller.principal, agent_id))
})
