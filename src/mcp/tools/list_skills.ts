import { Effect, Schema } from "effect"
import { SkillPage, SkillStatus } from "../../../schema/Skills.js"
import { Skills } from "../../skills/Skills.js"
import { defineTool } from "../McpTool.js"

export default defineTool({
  name: "list_skills",
  description: "Skills the caller may see: the published organization catalog, their own, and skills scoped to " +
    "agents they created (GET /v1/skills).",
  input: Schema.Struct({
    status: Schema.optional(SkillStatus),
    limit: Schema.optional(Schema.Int.pipe(Schema.between(1, 200))),
    cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous page." })
  }),
  output: SkillPage,
  annotations: {
    title: "List skills",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false
  },
  run: (input, { caller }) => Effect.flatMap(Skills, (skills) => skills.list(caller.principal, input))
})
