import { Chunk, Duration, Effect, Option, Stream } from "effect"
import type { Principal } from "../../schema/Security.js"
import { EventLog } from "../events/EventLog.js"
import { Approvals } from "../skills/Approvals.js"

/**
 * `GET /v1/approvals/{id}?wait=N`: the approval once it is no longer pending, or as it is after `seconds`.
 * A decision (or expiry) is an `approval.decided` event of the organization, and each commit of the
 * organization's events wakes this node's waiters (EventLog.changes, with its periodic safety net): the
 * request is read again then, not polled.
 */
export const approvalAfter = (principal: Principal, id: string, seconds: number) =>
  Effect.gen(function*() {
    const approvals = yield* Approvals
    const first = yield* approvals.get(principal, id)
    if (first.status !== "pending" || seconds <= 0) return first
    const log = yield* EventLog
    const decided = yield* log.changes(principal.organizationId).pipe(
      // read once more after subscribing: a decision between the first read and the subscription is not lost
      Stream.prepend(Chunk.of(undefined)),
      Stream.mapEffect(() => approvals.get(principal, id)),
      Stream.filter((a) => a.status !== "pending"),
      Stream.runHead,
      Effect.timeout(Duration.seconds(seconds)),
      Effect.catchTag("TimeoutException", () => Effect.succeed(Option.none()))
    )
    return Option.isSome(decided) ? decided.value : yield* approvals.get(principal, id)
  })
