import { Effect, Layer, Schedule } from "effect"
import { UsageRepo } from "./UsageRepo.js"

/** How often a node folds what was written into the rollups: reads of `GET /v1/usage` lag by about this. */
export const FOLD_EVERY = "1 second"

/**
 * Folds into the usage rollups what the task path writes anyway (migration 0022): task ends from the event
 * log, model calls from `llm_usage`, connector calls from `connector_invocations`, each after a stored
 * position. Runs on every node, when there is something to fold (`due`); one node at a time gets the lock, the
 * others find it taken and wait for the next round. A backlog (after every node was down) goes in several rounds
 * at once.
 */
export const UsageFolderLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const repo = yield* UsageRepo
    const foldAll = repo.fold.pipe(Effect.repeat({ while: (r) => r.held && r.more }))
    // a round only when there is something to fold: an idle node asks one cheap question a second
    yield* Effect.flatMap(repo.due, (due) => due ? foldAll : Effect.void).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("usage fold failed; trying again", cause)),
      // every second on every node: its statements are not root spans in the operator's traces
      Effect.withTracerEnabled(false),
      Effect.repeat(Schedule.spaced(FOLD_EVERY)),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(UsageRepo.Default))
