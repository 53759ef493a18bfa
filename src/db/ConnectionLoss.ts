import { Cause } from "effect"

/**
 * Whether an error is the database out of reach (refused, reset, cut, timed out), not a statement's fault:
 * the same statement may succeed once it is back, so what failed is not to be blamed on its input.
 */
export const isConnectionError = (error: unknown) =>
  typeof error === "object" && error !== null && (error as any)._tag === "SqlError" &&
  /ECONNREFUSED|ECONNRESET|EPIPE|terminat|timeout|Connection|connect/i.test(String((error as any).cause ?? error))

/**
 * Whether an error is PostgreSQL rolling a transaction back for a concurrent one's sake (a deadlock, a
 * serialization failure): nothing of that transaction was kept, and it may well succeed when run again.
 */
export const isConflict = (error: unknown) =>
  typeof error === "object" && error !== null && (error as any)._tag === "SqlError" &&
  CONFLICTS.has((error as any).cause?.code)

const CONFLICTS = new Set(["40P01", "40001"])

/** Whether any failure or defect in `cause` is the database out of reach. */
export const lostConnection = (cause: Cause.Cause<unknown>) =>
  [...Cause.failures(cause), ...Cause.defects(cause)].some(isConnectionError)
