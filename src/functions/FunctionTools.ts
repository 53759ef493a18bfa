import { Effect } from "effect"
import type { FunctionId } from "../../schema/Functions.js"
import type { ToolSpec } from "../agents/models/ModelProvider.js"
import { emptyToolSet, type RunScope, type ToolResult, type ToolSet } from "../agents/ToolSet.js"
import { Workspace } from "../files/Workspace.js"
import { runPrincipal } from "../identity/RunPrincipal.js"
import { type CallScope, fileRead, filesListed, FunctionCalls } from "./FunctionCalls.js"
import { FunctionRepo, type FunctionRow } from "./FunctionRepo.js"

const isObjectSchema = (schema: Record<string, unknown>) => schema["type"] === "object"

/** A tool's parameters are an object: a function whose input is not one takes it as `input`. */
const parametersOf = (row: FunctionRow) =>
  isObjectSchema(row.input_schema)
    ? row.input_schema
    : { type: "object", properties: { input: row.input_schema }, required: ["input"], additionalProperties: false }

/** One function as a run's tool: its spec, and a call that runs it in the sandbox as the run. */
export interface FunctionTool {
  readonly spec: ToolSpec
  readonly call: (args: unknown) => Effect.Effect<ToolResult>
}

/**
 * An agent's custom functions as tools (issue 25): each function attached to the agent, or given by a skill
 * it holds, is a tool named after it, its `input_schema` the parameters. A call runs the function's current
 * version in the sandbox as the run calls connectors (as the task's invoker, with the task), its files in the
 * agent's workspace.
 */
export class FunctionTools extends Effect.Service<FunctionTools>()("functions/FunctionTools", {
  effect: Effect.gen(function*() {
    const repo = yield* FunctionRepo
    const calls = yield* FunctionCalls
    const workspace = yield* Workspace

    const scopeOf = (run: RunScope) =>
      Effect.map(repo.runIdentity(run.organizationId, run.agentId, run.taskId), (identity): CallScope => {
        const files = workspace.forAgent(run)
        return {
          principal: runPrincipal(
            identity?.task_id == null
              // no task found: no invoker, and the run's own agent only
              ? {
                organization_id: run.organizationId,
                invoker_user_id: null,
                api_key_id: null,
                invoker_agent_ids: [run.agentId]
              }
              : { ...identity, organization_id: run.organizationId }
          ),
          taskId: run.taskId,
          files: {
            list: (prefix, cursor) => Effect.map(files.list(prefix, cursor), filesListed),
            read: (name, offset) => Effect.map(files.read(name, offset ?? 0), fileRead),
            write: (name, text) =>
              Effect.map(files.write(name, text), (f) => ({ id: f.id, name: f.name, size: f.size }))
          }
        }
      })

    const toolOf = (scope: CallScope, row: FunctionRow): FunctionTool => ({
      spec: {
        name: row.name,
        description: row.description === "" ? `Custom function ${row.name}.` : row.description,
        parameters: parametersOf(row) as ToolSpec["parameters"]
      },
      call: (args) =>
        calls.run(
          scope,
          row,
          isObjectSchema(row.input_schema)
            ? args
            : typeof args === "object" && args !== null
            ? (args as Record<string, unknown>)["input"]
            : undefined
        ).pipe(
          Effect.match({
            onFailure: (e) => ({ outcome: "error" as const, content: `error: ${e.code}: ${e.message}` }),
            onSuccess: (r) => ({ outcome: "ok" as const, content: JSON.stringify(r.output) ?? "null" })
          })
        )
    })

    /** The functions attached to the agent. */
    const forRun = (run: RunScope): Effect.Effect<ToolSet> =>
      Effect.gen(function*() {
        const rows = yield* repo.attached(run.organizationId, run.agentId)
        if (rows.length === 0) return emptyToolSet
        const scope = yield* scopeOf(run)
        const byName = new Map(rows.map((r) => [r.name, toolOf(scope, r)]))
        return {
          specs: [...byName.values()].map((t) => t.spec),
          has: (name) => byName.has(name),
          call: (call): Effect.Effect<ToolResult> =>
            byName.get(call.name)?.call(call.arguments) ??
              Effect.succeed({ outcome: "error", content: `error: there is no tool named ${call.name}` })
        } satisfies ToolSet
      })

    /** Functions that skills give the run, by id; a function deleted since is missing from the answer. */
    const byIds = (run: RunScope, ids: ReadonlyArray<FunctionId>) =>
      Effect.gen(function*() {
        const tools = new Map<FunctionId, FunctionTool>()
        if (ids.length === 0) return tools
        const scope = yield* scopeOf(run)
        for (const id of new Set(ids)) {
          const row = yield* repo.find(run.organizationId, id)
          if (row !== undefined) tools.set(id, toolOf(scope, row))
        }
        return tools
      })

    return { forRun, byIds } as const
  }),
  dependencies: [FunctionRepo.Default, FunctionCalls.Default, Workspace.Default]
}) {}
