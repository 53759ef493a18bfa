import { Effect } from "effect"
import type { AgentId, OrganizationId, TaskId } from "../../schema/Ids.js"
import type { ToolCall, ToolSpec } from "./models/ModelProvider.js"

/** The run a built-in tool serves: whose agent, which task, and the person it is recorded under. */
export interface RunScope {
  readonly organizationId: OrganizationId
  readonly agentId: AgentId
  readonly taskId: TaskId
  readonly user: { readonly id: string; readonly email: string | null }
}

/** What a built-in tool call answers the model: its text, and whether it failed. */
export interface ToolResult {
  readonly outcome: "ok" | "error"
  readonly content: string
}

/** Tools a run is offered beside its connector tools: their specs, and how to call one of them. */
export interface ToolSet {
  readonly specs: ReadonlyArray<ToolSpec>
  readonly has: (name: string) => boolean
  readonly call: (call: ToolCall) => Effect.Effect<ToolResult>
}

export const emptyToolSet: ToolSet = { specs: [], has: () => false, call: () => Effect.die("no built-in tools") }

/**
 * One tool set out of several: a name already taken (by a connector tool, or an earlier set) stays with
 * its first holder, so an agent's own skills always win over a built-in of the same name.
 */
export const combineToolSets = (sets: ReadonlyArray<ToolSet>, taken: ReadonlySet<string>): ToolSet => {
  const owner = new Map<string, ToolSet>()
  const specs: Array<ToolSpec> = []
  for (const set of sets) {
    for (const spec of set.specs) {
      if (taken.has(spec.name) || owner.has(spec.name)) continue
      owner.set(spec.name, set)
      specs.push(spec)
    }
  }
  return {
    specs,
    has: (name) => owner.has(name),
    call: (call) => {
      const set = owner.get(call.name)
      return set === undefined
        ? Effect.succeed({ outcome: "error", content: `error: there is no tool named ${call.name}` })
        : set.call(call)
    }
  }
}
