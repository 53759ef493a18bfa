import { Effect, Schema } from "effect"
import { FilePage, MAX_FILE_NAME } from "../../../schema/Files.js"
import { AgentId } from "../../../schema/Ids.js"
import { Files } from "../../files/Files.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_files",
  description: "Workspace files you may see, in name order: the organization's and agents' workspaces " +
    "(GET /v1/files). Read one as text with read_file.",
  input: Schema.Struct({
    prefix: Schema.optional(Schema.String.pipe(Schema.maxLength(MAX_FILE_NAME))).annotations({
      description: "Only names starting with this, e.g. `reports/`."
    }),
    agent_id: Schema.optional(AgentId).annotations({ description: "Only this agent's workspace." }),
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: FilePage,
  annotations: {
    title: "List workspace files",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(Files, (files) => files.list(caller.principal, input))
})
