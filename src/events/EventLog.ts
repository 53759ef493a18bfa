import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Runtime, Schedule, Stream } from "effect"
import { Gone } from "../../schema/Errors.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { everyJittered } from "../support/Periodic.js"
import { type EventPage, type EventRecord, EventRepo } from "./EventRepo.js"
import { type Accept, makeTails, PAGE, type Subscribe } from "./EventTails.js"

export type { EventPage, EventRecord } from "./EventRepo.js"

/** The channel the event triggers notify, with the organization's id as payload (migration 0016). */
export const EVENTS_CHANNEL = "switchyard_events"

/** Every tail is read again this often, should a notification have been lost (a listener reconnecting). */
const SAFETY_NET = Duration.seconds(2)
/** How often retention runs on each node (jittered): any node may, and a row is deleted once. */
const PRUNE_EVERY = Duration.minutes(5)

export interface ReadOptions {
  readonly limit?: number
  /** Only these types. */
  readonly types?: ReadonlyArray<string>
  /** Only events of this agent's tasks. */
  readonly agentId?: string
  /** Only this task's events (read by index). */
  readonly taskId?: TaskId
}

/** How long a node's interest in an organization lasts unless renewed, and how often it renews it. */
const LISTEN_SECONDS = 30
const RENEW_EVERY = Duration.seconds(10)

const expired = (after: bigint, horizon: bigint) =>
  Gone.of(
    `Events after ${after} were pruned (older than the retention window); the oldest kept follows ${horizon}. ` +
      "Resume with Last-Event-ID: 0 and read the current state to reconcile.",
    "events_expired",
    { oldest_after: horizon.toString() }
  )

/**
 * The event log's one reader API (docs/guides/events.md). Events are written by the database with each
 * change (migration 0016); here they are read in order, with no gap and no repeat, from any position a
 * reader saw.
 *   - `read`: a page of committed events after a position, and the position to go on from (`next`).
 *   - `changes`: wake-ups for an organization: a notification of a commit, or the periodic safety net.
 *     `read` after each; what was read already is not read again.
 *   - `follow`: an endless stream of an organization's events after a position (what the SSE endpoints
 *     send). Streams of one organization on a node share one reader (its tail): a commit costs one read
 *     per node, whatever the number of streams.
 * Position 0 is "from the oldest event kept"; a position below what retention pruned fails with 410
 * `events_expired`.
 */
export class EventLog extends Effect.Service<EventLog>()("events/EventLog", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const repo = yield* EventRepo
    const config = yield* SwitchyardConfig
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const listeners = new Map<string, Set<() => void>>()

    const checked = (page: EventPage, after: bigint) =>
      after !== 0n && after < page.horizon ? Effect.fail(expired(after, page.horizon)) : Effect.succeed(page)

    /**
     * Committed events of the organization after `after`, in order, with filters applied after the read:
     * `next` also moves past events the filters left out. `pending`: more are committed but cannot be read
     * yet (a transaction that took a lower id still runs); read again shortly.
     */
    const read = (organizationId: OrganizationId, after: bigint, options: ReadOptions = {}) =>
      Effect.gen(function*() {
        const page = yield* checked(
          yield* repo.read(organizationId, after, options.limit ?? PAGE, options.taskId),
          after
        )
        if (options.types === undefined && options.agentId === undefined) return page
        const types = options.types === undefined ? undefined : new Set(options.types)
        return {
          ...page,
          events: page.events.filter((e) =>
            (types === undefined || types.has(e.type)) &&
            (options.agentId === undefined || e.agentId === options.agentId)
          )
        }
      })

    const interested = () => new Set([...tails.organizations(), ...listeners.keys()])
    /**
     * Commits notify only for organizations some node follows (migration 0016): a new one is registered at
     * once, then its tail reads what committed before the registration did.
     */
    const register = (organizationId: string) =>
      runFork(
        repo.listen([organizationId], LISTEN_SECONDS).pipe(
          Effect.zipRight(Effect.sync(() => woken(organizationId))),
          Effect.catchAllCause((cause) => Effect.logWarning("event listener registration failed", cause))
        )
      )

    const tails = makeTails({ repo, checked, run: (effect) => void runFork(effect), created: register })

    const woken = (organizationId: string) => {
      tails.woken(organizationId)
      for (const wake of listeners.get(organizationId) ?? []) wake()
    }

    yield* sql.listen(EVENTS_CHANNEL).pipe(
      Stream.runForEach((organizationId) => Effect.sync(() => woken(organizationId))),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )
    yield* Effect.sync(() => {
      for (const organizationId of interested()) woken(organizationId)
    }).pipe(Effect.repeat(Schedule.spaced(SAFETY_NET)), Effect.forkScoped)
    yield* Effect.suspend(() => {
      const organizations = [...interested()]
      return organizations.length === 0 ? Effect.void : repo.listen(organizations, LISTEN_SECONDS)
    }).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("event listener renewal failed", cause)),
      Effect.repeat(Schedule.spaced(RENEW_EVERY)),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => tails.close()))

    // retention: any node, at a jittered interval
    yield* everyJittered(
      PRUNE_EVERY,
      "event retention",
      repo.prune(config.eventRetention).pipe(
        Effect.tap((n) => n > 0 ? Effect.logInfo(`pruned ${n} event(s) past retention`) : Effect.void)
      )
    ).pipe(Effect.forkScoped)

    /** Wake-ups of the organization: after each commit of its events here or elsewhere, and periodically. */
    const changes = (organizationId: OrganizationId): Stream.Stream<void> =>
      Stream.asyncPush<void>((emit) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const wake = () => void emit.single(undefined)
            const set = listeners.get(organizationId)
            if (set === undefined) {
              listeners.set(organizationId, new Set([wake]))
              register(organizationId)
            } else {
              set.add(wake)
            }
            return wake
          }),
          (wake) =>
            Effect.sync(() => {
              const set = listeners.get(organizationId)
              set?.delete(wake)
              if (set?.size === 0) listeners.delete(organizationId)
            })
        ), { bufferSize: 1, strategy: "sliding" })

    /**
     * The organization's events after `after` that `accept` takes, in order, without end (EventTails.ts):
     * a stream that falls far behind reads on its own until it catches up.
     */
    const follow = (
      organizationId: OrganizationId,
      after: bigint,
      accept: Accept,
      taskId?: TaskId
    ): Stream.Stream<EventRecord, Gone> => tails.follow(organizationId, after, accept, taskId)

    /**
     * The same events as `follow`, pushed to a sink with no fiber per stream while it waits (what
     * EventStreamResponse.followResponse writes from): given a sink, `request` asks for more, `close` leaves.
     */
    const subscribe = (
      organizationId: OrganizationId,
      after: bigint,
      accept: Accept,
      taskId?: TaskId
    ): Subscribe =>
    (sink) => tails.subscribe(organizationId, after, accept, taskId, sink)

    /** The position of "now" in the organization's log: reading after it gives what commits from here on. */
    const position = (_organizationId: OrganizationId) => repo.now

    return { read, changes, follow, subscribe, position } as const
  }),
  dependencies: [EventRepo.Default]
}) {}
