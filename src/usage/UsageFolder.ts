import { Effect, Layer, Schedule } from "effect"
import { UsageRepo } from "./UsageRepo.js"

/** How often a node folds the rollups' deltas (readers add the deltas not yet folded, so this is no lag). */
const FOLD_EVERY = "1 second"

/**
 * Folds the usage deltas the triggers append (migration 0020) into the rollups, on every node; one node at
 * a time gets the lock, the others find it taken and wait for the next round. Folding keeps the deltas, which
 * every read scans, to about a second's worth of writes; a backlog (after all nodes were down) goes in
 * several statements at once.
 */
export const UsageFolderLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const repo = yield* UsageRepo
    const foldAll = repo.fold.pipe(Effect.repeat({ while: (r) => r.held && r.more }))
    yield* foldAll.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("usage fold failed; trying again", cause)),
      Effect.repeat(Schedule.spaced(FOLD_EVERY)),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(UsageRepo.Default))
