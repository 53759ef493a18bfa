import { Effect } from "effect"
import { Workspace } from "../files/Workspace.js"
import { workspaceTools } from "../files/WorkspaceTools.js"
import { FunctionTools } from "../functions/FunctionTools.js"
import { KnowledgeTools } from "../knowledge/KnowledgeTools.js"
import { combineToolSets, type RunScope } from "./ToolSet.js"

/**
 * The built-in tools of an agent's run (issue 25): workspace files for every agent, then each area's
 * tools (knowledge search for an agent with bases, its custom functions). An area adds its tools by
 * answering `forRun` in its own service; this is the one place they are put together.
 */
export class BuiltinTools extends Effect.Service<BuiltinTools>()("agents/BuiltinTools", {
  effect: Effect.gen(function*() {
    const workspace = yield* Workspace
    const knowledge = yield* KnowledgeTools
    const functions = yield* FunctionTools
    return {
      /**
       * `attached`, when the run's start read it, says which areas the agent has attachments in: an area
       * without any is not asked (no read per run for the agents that have none).
       */
      forRun: (
        scope: RunScope,
        taken: ReadonlySet<string>,
        attached?: { readonly knowledge: boolean; readonly functions: boolean }
      ) =>
        Effect.gen(function*() {
          const files = workspaceTools(workspace.forAgent(scope))
          const reads = [
            ...(attached?.knowledge === false ? [] : [knowledge.forRun(scope)]),
            ...(attached?.functions === false ? [] : [functions.forRun(scope)])
          ]
          // concurrent only when both are read: forking costs a run more CPU than the rest of its tools
          const sets = yield* Effect.all(reads, { concurrency: reads.length > 1 ? "unbounded" : 1 })
          return combineToolSets([files, ...sets], taken)
        }),
      /** Custom functions that the agent's skills name as actions (their approval is the run's to ask). */
      skillFunctions: functions.byIds
    }
  })
}) {}
