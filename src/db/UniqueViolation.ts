import { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

/** A unique index refused the write (PostgreSQL `unique_violation`): a repository answers it as a `Conflict`. */
const isUniqueViolation = (e: SqlError) => (e.cause as { readonly code?: unknown } | undefined)?.code === "23505"

/**
 * A write whose storage errors stop at its repository: a unique violation becomes `conflict` (two writes of
 * one name at once: the unique index decides), any other SqlError a defect.
 */
export const conflictOnUnique =
  <E2>(conflict: () => Effect.Effect<never, E2>) =>
  <A, E, R>(self: Effect.Effect<A, E | SqlError, R>): Effect.Effect<A, Exclude<E, SqlError> | E2, R> =>
    Effect.catchIf(
      self,
      (e): e is SqlError => e instanceof SqlError,
      (e) => isUniqueViolation(e) ? conflict() : Effect.die(e)
    )
