import { Schema } from "effect"
import { AgentId, TaskId } from "./Ids.js"
import { requestBody } from "./RequestBody.js"
import { ApprovalId } from "./Skills.js"
import { Timestamp } from "./Timestamp.js"

/** Limits of a command policy and of a command to check (docs/guides/commands.md). */
export const MAX_RULES = 200
export const MAX_PATTERN_LENGTH = 500
export const MAX_COMMAND_LENGTH = 16_384

export const CommandAction = Schema.Literal("allow", "deny", "require_approval").annotations({
  identifier: "CommandAction",
  description: "`allow` runs it; `deny` refuses it; `require_approval` waits for a person (an approval request)."
})
export type CommandAction = typeof CommandAction.Type

export const CommandPattern = Schema.String.pipe(
  Schema.filter((s) => s.trim() !== "", { message: () => "must not be empty" }),
  Schema.maxLength(MAX_PATTERN_LENGTH, { message: () => `must be at most ${MAX_PATTERN_LENGTH} characters` }),
  Schema.pattern(/^[^\x00-\x1f\x7f]*$/, { message: () => "must be one line, without control characters" })
).annotations({
  description: "A glob over one simple command's words, separated by spaces: `*` any characters in a word, `?` " +
    "one, `[…]` a class; a last word `*` stands for any further words (none included). `git push *`, " +
    "`npm run *`, `rm *`; `*` alone matches every command; `> *` every output redirection to a file."
})

export const CommandRule = Schema.Struct({
  pattern: CommandPattern,
  action: CommandAction
}).annotations({ identifier: "CommandRule" })

export const CommandPolicyInput = Schema.Struct({
  default_action: CommandAction.annotations({ description: "What a command no rule matches gets." }),
  rules: Schema.Array(CommandRule).pipe(
    Schema.maxItems(MAX_RULES, { message: () => `at most ${MAX_RULES} rules` })
  ).annotations({ description: "In order: the first rule that matches a command decides." })
}).annotations({ identifier: "CommandPolicyInput", ...requestBody })
export type CommandPolicyInput = typeof CommandPolicyInput.Type

export class CommandPolicy extends Schema.Class<CommandPolicy>("CommandPolicy")({
  agent_id: AgentId,
  default_action: CommandAction,
  rules: Schema.Array(CommandRule),
  is_default: Schema.Boolean.annotations({
    description: "No policy was set: every command is denied (`default_action: deny`, no rules)."
  }),
  updated_at: Schema.NullOr(Timestamp)
}) {}

export const CheckCommand = Schema.Struct({
  command: Schema.String.pipe(
    Schema.filter((s) => s.trim() !== "", { message: () => "must not be empty" }),
    Schema.maxLength(MAX_COMMAND_LENGTH, { message: () => `must be at most ${MAX_COMMAND_LENGTH} characters` })
  ).annotations({ description: "The shell text the runtime is about to run (bash syntax)." }),
  cwd: Schema.optional(Schema.String.pipe(Schema.maxLength(4096))).annotations({
    description: "The directory it would run in: recorded with the decision, not matched."
  }),
  task_id: Schema.optional(TaskId).annotations({
    description: "The agent's task the command belongs to: the decision is recorded in its thread (else in the " +
      "audit log), and an approval request names it."
  })
}).annotations({ identifier: "CheckCommand", ...requestBody })
export type CheckCommand = typeof CheckCommand.Type

export const JudgedCommand = Schema.Struct({
  words: Schema.Array(Schema.String).annotations({
    description: "The simple command's words as judged (after leading assignments and wrappers such as `env`, " +
      "`sudo`, `xargs`): each word's text when known before it runs, else as written. An output redirection " +
      "to a file is judged as `[\">\" or \">>\", file]`."
  }),
  decision: CommandAction,
  rule: Schema.NullOr(Schema.String).annotations({
    description: "The deciding rule's pattern; null for the default action or a refusal of the gate itself."
  }),
  reason: Schema.optional(Schema.String).annotations({
    description: "Why it was denied whatever the rules say (unreadable text, an unknown command name, …)."
  })
}).annotations({ identifier: "JudgedCommand" })

export const CommandDecision = Schema.Struct({
  decision: Schema.Literal("allow", "deny", "pending").annotations({
    description: "The strictest of its commands' decisions. `pending`: wait for the approval (`approval_id`) " +
      "with `GET /v1/approvals/{approval_id}?wait=30` until it is approved (run it) or rejected/expired (do not)."
  }),
  rule: Schema.NullOr(Schema.String),
  reason: Schema.optional(Schema.String),
  approval_id: Schema.optional(ApprovalId),
  commands: Schema.Array(JudgedCommand)
}).annotations({ identifier: "CommandDecision" })
export type CommandDecision = typeof CommandDecision.Type
