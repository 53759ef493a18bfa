import { Effect, Schema } from "effect"
import { AgentList } from "../../../schema/Agents.js"
import { optionalPageInput } from "../../../schema/QueryParams.js"
import { Agents } from "../../agents/Agents.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_agents",
  description: "List the agents of your organization (GET /v1/agents).",
  input: Schema.Struct(optionalPageInput("Agents", "every agent")),
  output: AgentList,
  annotations: {
    title: "List agents",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (params, { caller }) => Effect.flatMap(Agents, (agents) => agents.list(caller.principal, params))
})
