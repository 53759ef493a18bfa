import { Effect } from "effect"
import { emptyToolSet, type RunScope, type ToolSet } from "../agents/ToolSet.js"

/** An agent's custom functions as tools (issue 25; not built yet). */
export class FunctionTools extends Effect.Service<FunctionTools>()("functions/FunctionTools", {
  succeed: {
    forRun: (_scope: RunScope): Effect.Effect<ToolSet> => Effect.succeed(emptyToolSet)
  }
}) {}
