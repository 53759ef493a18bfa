import { Effect, Schema } from "effect"
import { FileName, WorkspaceFile } from "../../../schema/Files.js"
import { AgentId } from "../../../schema/Ids.js"
import { Workspace } from "../../files/Workspace.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "write_file",
  description: "Write a text file to the workspace (POST /v1/files; Builder and above): the organization's, or " +
    "an agent's with `agent_id`. A name in use is refused (`file_exists`) unless `overwrite` is true.",
  input: Schema.Struct({
    // described here: the JSON Schema of the refinement FileName drops its description
    name: Schema.propertySignature(FileName).annotations({
      description: "The file's name: a relative path such as `reports/2026/q1.csv`."
    }),
    text: Schema.String.annotations({ description: "The file's content, stored as UTF-8." }),
    agent_id: Schema.optional(AgentId).annotations({ description: "Write in this agent's workspace." }),
    overwrite: Schema.optional(Schema.Boolean).annotations({
      description: "Replace a file of that name (the new file gets a new id)."
    })
  }),
  output: WorkspaceFile,
  annotations: {
    title: "Write a workspace file",
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(Workspace, (workspace) => workspace.writeText(caller.principal, input))
})
