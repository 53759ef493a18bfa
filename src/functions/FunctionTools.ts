import { Effect } from "effect"
import type { ApiKeyId, UserId } from "../../schema/Ids.js"
import type { Principal } from "../../schema/Security.js"
import type { ToolSpec } from "../agents/models/ModelProvider.js"
import { emptyToolSet, type RunScope, type ToolResult, type ToolSet } from "../agents/ToolSet.js"
import { Workspace } from "../files/Workspace.js"
import { type CallScope, FunctionCalls } from "./FunctionCalls.js"
import { FunctionRepo, type FunctionRow } from "./FunctionRepo.js"

const isObjectSchema = (schema: Record<string, unknown>) => schema["type"] === "object"

/** A tool's parameters are an object: a function whose input is not one takes it as `input`. */
const parametersOf = (row: FunctionRow) =>
  isObjectSchema(row.input_schema)
    ? row.input_schema
    : { type: "object", properties: { input: row.input_schema }, required: ["input"], additionalProperties: false }

/**
 * An agent's custom functions as tools (issue 25): each function attached to the agent is a tool named after
 * it, its `input_schema` the parameters. A call runs the function's current version in the sandbox as the
 * run calls connectors (the agent's creator, with the task), its files in the agent's workspace.
 */
export class FunctionTools extends Effect.Service<FunctionTools>()("functions/FunctionTools", {
  effect: Effect.gen(function*() {
    const repo = yield* FunctionRepo
    const calls = yield* FunctionCalls
    const workspace = yield* Workspace

    const forRun = (run: RunScope): Effect.Effect<ToolSet> =>
      Effect.gen(function*() {
        const rows = yield* repo.attached(run.organizationId, run.agentId)
        if (rows.length === 0) return emptyToolSet
        const identity = yield* repo.runIdentity(run.organizationId, run.agentId, run.taskId)
        const principal: Principal = {
          organizationId: run.organizationId,
          userId: (identity?.created_by ?? null) as UserId | null,
          keyId: (identity?.api_key_id ?? "task") as ApiKeyId,
          role: "member",
          agentIds: null
        }
        const files = workspace.forAgent(run)
        const scope: CallScope = {
          principal,
          taskId: run.taskId,
          files: {
            list: (prefix) => files.list(prefix),
            read: (name, offset) => files.read(name, offset ?? 0),
            write: (name, text) =>
              Effect.map(files.write(name, text), (f) => ({ id: f.id, name: f.name, size: f.size }))
          }
        }
        const byName = new Map(rows.map((r) => [r.name, r]))
        const specs: Array<ToolSpec> = rows.map((r) => ({
          name: r.name,
          description: r.description === "" ? `Custom function ${r.name}.` : r.description,
          parameters: parametersOf(r) as ToolSpec["parameters"]
        }))
        return {
          specs,
          has: (name) => byName.has(name),
          call: (call): Effect.Effect<ToolResult> => {
            const row = byName.get(call.name)
            if (row === undefined) {
              return Effect.succeed({ outcome: "error", content: `error: there is no tool named ${call.name}` })
            }
            const args = call.arguments
            const input = isObjectSchema(row.input_schema)
              ? args
              : typeof args === "object" && args !== null
              ? (args as Record<string, unknown>)["input"]
              : undefined
            return calls.run(scope, row, input).pipe(
              Effect.match({
                onFailure: (e) => ({ outcome: "error" as const, content: `error: ${e.code}: ${e.message}` }),
                onSuccess: (r) => ({ outcome: "ok" as const, content: JSON.stringify(r.output) ?? "null" })
              })
            )
          }
        } satisfies ToolSet
      })

    return { forRun } as const
  }),
  dependencies: [FunctionRepo.Default, FunctionCalls.Default, Workspace.Default]
}) {}
