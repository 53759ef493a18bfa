import { Effect, Schema } from "effect"
import { TaskId } from "../../../schema/Ids.js"
import { ApprovalPage, ApprovalStatus } from "../../../schema/Skills.js"
import { Approvals } from "../../skills/Approvals.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_approvals",
  description: "Requests for approval of tool calls, newest first, e.g. the pending ones (GET /v1/approvals; Admin+).",
  input: Schema.Struct({
    status: Schema.optional(ApprovalStatus).annotations({ description: "Only approvals in this state." }),
    task_id: Schema.optional(TaskId),
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: ApprovalPage,
  annotations: {
    title: "List approval requests",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(Approvals, (approvals) => approvals.list(caller.principal, input))
})
