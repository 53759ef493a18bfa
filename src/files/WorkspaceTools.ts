import { Effect, Either, ParseResult, Schema } from "effect"
import { FileName, MAX_FILE_NAME } from "../../schema/Files.js"
import type { ToolCall, ToolSpec } from "../agents/models/ModelProvider.js"
import type { ToolResult, ToolSet } from "../agents/ToolSet.js"
import { toolInputSchema } from "../mcp/ToolSchema.js"
import type { Workspace } from "./Workspace.js"

const ListInput = Schema.Struct({
  prefix: Schema.optional(Schema.String.pipe(Schema.maxLength(MAX_FILE_NAME))).annotations({
    description: "Only names starting with this, e.g. `reports/`."
  }),
  cursor: Schema.optional(Schema.String).annotations({ description: "`next_cursor` of the previous answer." })
})
const ReadInput = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(MAX_FILE_NAME)).annotations({
    description: "The file's name, e.g. `notes/plan.md`."
  }),
  offset: Schema.optional(Schema.Int.pipe(Schema.nonNegative())).annotations({
    description: "Byte to start at (default 0), to read on where a previous read stopped."
  })
})
const WriteInput = Schema.Struct({
  name: FileName,
  text: Schema.String.annotations({ description: "The whole new content, as text." })
})

const SPECS: ReadonlyArray<ToolSpec> = [
  {
    name: "list_files",
    description: "List the files you can read: your own workspace's and the organization's shared files.",
    parameters: toolInputSchema(ListInput)
  },
  {
    name: "read_file",
    description: "Read a text file by name (your workspace first, then the organization's), 64 KiB at a time.",
    parameters: toolInputSchema(ReadInput)
  },
  {
    name: "write_file",
    description: "Write a text file in your workspace; a file of the same name there is replaced.",
    parameters: toolInputSchema(WriteInput)
  }
]

type AgentWorkspace = ReturnType<Workspace["forAgent"]>

const decode = <A, I>(schema: Schema.Schema<A, I>, args: unknown) =>
  Either.mapLeft(
    Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(args),
    (e) => `error: invalid arguments: ${ParseResult.TreeFormatter.formatErrorSync(e)}`
  )

const run = (workspace: AgentWorkspace, call: ToolCall): Effect.Effect<ToolResult> => {
  const done = (content: string) => Effect.succeed({ outcome: "ok" as const, content })
  const answer = (effect: Effect.Effect<string, { readonly message: string }>) =>
    Effect.match(effect, {
      onFailure: (e) => ({ outcome: "error" as const, content: `error: ${e.message}` }),
      onSuccess: (content) => ({ outcome: "ok" as const, content })
    })
  const invalid = (content: string) => Effect.succeed({ outcome: "error" as const, content })
  switch (call.name) {
    case "list_files":
      return Either.match(decode(ListInput, call.arguments), {
        onLeft: invalid,
        onRight: ({ cursor, prefix }) =>
          answer(Effect.map(workspace.list(prefix, cursor), (page) =>
            JSON.stringify({
              files: page.items.map((f) => ({ name: f.name, size: f.size, type: f.content_type, scope: f.scope })),
              next_cursor: page.next_cursor
            })))
      })
    case "read_file":
      return Either.match(decode(ReadInput, call.arguments), {
        onLeft: invalid,
        onRight: ({ name, offset }) =>
          answer(Effect.map(workspace.read(name, offset), (r) =>
            r.truncated
              ? `${r.text}\n[bytes ${r.offset}–${r.offset + r.bytes_read} of ${r.file.size}: read_file with ` +
                `offset ${r.offset + r.bytes_read} reads on]`
              : r.text))
      })
    case "write_file":
      return Either.match(decode(WriteInput, call.arguments), {
        onLeft: invalid,
        onRight: ({ name, text }) =>
          answer(Effect.map(workspace.write(name, text), (f) => `wrote ${f.name} (${f.size} bytes, id ${f.id})`))
      })
    default:
      return done(`error: there is no tool named ${call.name}`)
  }
}

/** The workspace tools every agent's run is offered (`list_files`, `read_file`, `write_file`). */
export const workspaceTools = (workspace: AgentWorkspace): ToolSet => ({
  specs: SPECS,
  has: (name) => SPECS.some((s) => s.name === name),
  call: (call) => run(workspace, call)
})
