import type { SqlError } from "@effect/sql/SqlError"

/** A unique index refused the write (PostgreSQL `unique_violation`): a repository answers it as a `Conflict`. */
export const isUniqueViolation = (e: SqlError) => (e.cause as { readonly code?: unknown } | undefined)?.code === "23505"
