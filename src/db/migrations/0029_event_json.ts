import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { eventsAppend, eventTriggers, triggerFunction } from "./0021_event_writes.js"

/**
 * Event payloads as `json` (issue 22: the event log's cost per task).
 *
 * `json_build_object` writes text where `jsonb_build_object` built and sorted a binary document, and the
 * readers send the payload as text (EventRepo builds each event's JSON around it), so the binary form was
 * paid for on every write and undone on every read. Keys now keep the order written. Measured with
 * bench/support/eventWrites.ts: about 20 of the triggers' ~165 µs of database CPU per sync task.
 * Changing the column's type rewrites the table once. Numbering and wake-ups are 0021's.
 */
export const statements: ReadonlyArray<string> = [
  "ALTER TABLE events ALTER COLUMN data TYPE json USING data::json",
  ...eventTriggers("json_build_object").map(triggerFunction),
  eventsAppend("d.data::json")
]

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const statement of statements) yield* sql.unsafe(statement)
})
