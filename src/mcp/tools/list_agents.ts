import { Effect, Schema } from "effect"
import { Agent } from "../../../schema/Agents.js"
import { ListOf } from "../../../schema/Identity.js"
import { Agents } from "../../agents/Agents.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_agents",
  description: "List the agents of your organization (GET /v1/agents).",
  input: Schema.Struct({}),
  output: ListOf(Agent),
  annotations: {
    title: "List agents",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (_, { caller }) => Effect.flatMap(Agents, (agents) => agents.list(caller.principal))
})
