import { Effect, Schema } from "effect"
import { Agent } from "../../../schema/Agents.js"
import { AgentId } from "../../../schema/Ids.js"
import { Agents } from "../../agents/Agents.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "get_agent",
  description: "Read one agent: model, instructions, skills, limits and budget (GET /v1/agents/{agent_id}).",
  input: Schema.Struct({ agent_id: AgentId }),
  output: Agent,
  annotations: {
    title: "Get an agent",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ agent_id }, { caller }) => Effect.flatMap(Agents, (agents) => agents.describe(caller.principal, agent_id))
})
