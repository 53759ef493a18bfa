/**
 * What the examples of several areas share: the ids and times of one story (schema/OperationExamples.ts) and the
 * shapes of a response, so an id in one operation's example is the same id in the next.
 */

/** One operation's example request body and response, as the document shows them. */
export interface OperationExample {
  readonly request?: unknown
  readonly response?: { readonly status: number; readonly value: unknown }
}

export const ok = (value: unknown) => ({ status: 200, value })
export const created = (value: unknown) => ({ status: 201, value })
export const accepted = (value: unknown) => ({ status: 202, value })
/** A cursor-paged list on its last page, and a counted list. */
export const page = (...items: ReadonlyArray<unknown>) => ({ items, next_cursor: null })
export const list = (...items: ReadonlyArray<unknown>) => ({ items, total: items.length })
/** A list that pages when asked, answered whole (no `limit`). */
export const allOf = (...items: ReadonlyArray<unknown>) => ({ ...list(...items), next_cursor: null })

/** A Timestamp in the contract's form (UTC, microseconds), on a day of January 2026. */
export const at = (day: number, time: string) => `2026-01-${String(day).padStart(2, "0")}T${time}.000000Z`
export const now = at(15, "09:30:00")

/** Where Acme Retail's node answers (its SWITCHYARD_PUBLIC_URL). */
export const baseUrl = "https://switchyard.example.com"

export const organizationId = "212e83ba-dff7-453b-9d1b-98e88eb9a6d3"
export const adaId = "302b67a2-a19b-4c7f-80d9-4cb343c0a4e0"
export const personalKeyId = "p8d2r5t1v6xa"
export const connectionId = "2a3b4c5d-6e7f-4a8b-9c0d-1e2f3a4b5c6d"
export const agentId = "0b8a4f0e-6c7d-4f43-9d0a-2f5b1f6f3a10"
export const digestTaskId = "e024319f-65ed-4208-97cc-0591596ff159"
export const refundTaskId = "8c4b2a1d-3e5f-4a6b-9c7d-0e1f2a3b4c5d"
export const approvalId = "902a51bd-a1eb-467b-970b-881ad3c2cc8b"
export const scheduleId = "42ff1b0a-d0af-4b9a-9da1-fd203c8466ef"

/** The person a task runs for (`input.user`), by the calling application's own id for them. */
export const user = { id: "customer-42", email: "ada@example.com" }
export const byAda = { type: "user", id: adaId, key_id: personalKeyId }
