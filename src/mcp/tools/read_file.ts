import { Effect, Schema } from "effect"
import { BadRequest } from "../../../schema/Errors.js"
import { FileId, FileText, MAX_FILE_NAME } from "../../../schema/Files.js"
import { AgentId } from "../../../schema/Ids.js"
import { DEFAULT_TEXT_READ, MAX_TEXT_READ, Workspace } from "../../files/Workspace.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "read_file",
  description: "Read a workspace text file, by `file_id` or by `name` (with `agent_id` for an agent's " +
    `workspace): up to ${MAX_TEXT_READ} bytes from \`offset\` as UTF-8; \`truncated\` says whether it goes on. ` +
    "Binary files are refused (`file_not_text`).",
  input: Schema.Struct({
    file_id: Schema.optional(FileId),
    name: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_FILE_NAME))),
    agent_id: Schema.optional(AgentId).annotations({ description: "With `name`: the agent's workspace." }),
    offset: Schema.optional(Schema.Int.pipe(Schema.nonNegative())).annotations({
      description: "Byte to start at (default 0); the previous read's `offset + bytes_read` reads on."
    }),
    max_bytes: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_TEXT_READ))).annotations({
      description: `Most bytes to read (default ${DEFAULT_TEXT_READ}).`
    })
  }),
  output: FileText,
  annotations: {
    title: "Read a workspace file",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: ({ agent_id, file_id, max_bytes, name, offset }, { caller }) =>
    Effect.gen(function*() {
      if ((file_id === undefined) === (name === undefined)) {
        return yield* BadRequest.of("Give either `file_id` or `name`.", undefined, "validation_failed")
      }
      const workspace = yield* Workspace
      return yield* workspace.readText(
        caller.principal,
        file_id !== undefined ? { file_id } : { name: name!, agent_id },
        offset,
        max_bytes
      )
    })
})
