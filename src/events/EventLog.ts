import { PgClient } from "@effect/sql-pg"
import { Chunk, Duration, Effect, Option, Runtime, Schedule, Stream } from "effect"
import { Gone } from "../../schema/Errors.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import { SwitchyardConfig } from "../config/SwitchyardConfig.js"
import { type EventPage, type EventRecord, EventRepo } from "./EventRepo.js"

export type { EventPage, EventRecord } from "./EventRepo.js"

/** The channel the event triggers notify, with the organization's id as payload (migration 0016). */
export const EVENTS_CHANNEL = "switchyard_events"

/** Every tail is read again this often, should a notification have been lost (a listener reconnecting). */
const SAFETY_NET = Duration.seconds(2)
/** Events per read. */
const PAGE = 500
/** A follower this far behind its tail leaves it and reads on its own until it catches up. */
const BUFFER_MAX = 5000
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

/** A stream's subscription to its organization's tail. */
interface Follower {
  readonly accept: (e: EventRecord) => boolean
  buffer: Array<EventRecord>
  detached: boolean
  wake: (() => void) | undefined
}

/** One reader per organization on this node, for all of its streams here: one read per change, not one per stream. */
interface Tail {
  position: bigint
  readonly followers: Set<Follower>
  busy: boolean
  again: boolean
  retry: ReturnType<typeof setTimeout> | undefined
  backoff: number
}

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

    const tails = new Map<string, Tail>()
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

    const pump = (organizationId: string, tail: Tail): void => {
      if (tail.busy) {
        tail.again = true
        return
      }
      tail.busy = true
      tail.again = false
      runFork(
        repo.read(organizationId as OrganizationId, tail.position, PAGE).pipe(
          Effect.map((page) => {
            tail.busy = false
            if (tails.get(organizationId) !== tail) return
            // pruned under a tail (far behind, or a long pause): its followers find out on their own reads
            const lost = page.horizon > tail.position && tail.position !== 0n
            tail.position = page.next
            for (const f of tail.followers) {
              if (!lost) {
                for (const e of page.events) if (f.accept(e)) f.buffer.push(e)
              }
              if (lost || f.buffer.length > BUFFER_MAX) {
                f.detached = true
                tail.followers.delete(f)
              }
              f.wake?.()
            }
            if (page.full || tail.again) return pump(organizationId, tail)
            if (page.pending) {
              // a transaction that took a lower id still runs: no commit may announce its end
              clearTimeout(tail.retry)
              tail.retry = setTimeout(() => pump(organizationId, tail), tail.backoff)
              tail.backoff = Math.min(tail.backoff * 2, 200)
            } else {
              tail.backoff = 2
            }
          }),
          Effect.catchAllCause((cause) =>
            Effect.sync(() => {
              tail.busy = false
              tail.retry = setTimeout(() => pump(organizationId, tail), 1000)
            }).pipe(Effect.zipRight(Effect.logWarning("event tail read failed", cause)))
          )
        )
      )
    }

    const woken = (organizationId: string) => {
      const tail = tails.get(organizationId)
      if (tail !== undefined) pump(organizationId, tail)
      for (const wake of listeners.get(organizationId) ?? []) wake()
    }

    yield* sql.listen(EVENTS_CHANNEL).pipe(
      Stream.runForEach((organizationId) => Effect.sync(() => woken(organizationId))),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )
    yield* Effect.sync(() => {
      for (const organizationId of new Set([...tails.keys(), ...listeners.keys()])) woken(organizationId)
    }).pipe(Effect.repeat(Schedule.spaced(SAFETY_NET)), Effect.forkScoped)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const tail of tails.values()) clearTimeout(tail.retry)
        tails.clear()
      })
    )

    // retention: any node, at a jittered interval
    yield* repo.prune(config.eventRetention).pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`pruned ${n} event(s) past retention`) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logWarning("event retention failed", cause)),
      Effect.delay(Duration.millis(Duration.toMillis(PRUNE_EVERY) * (0.5 + Math.random()))),
      Effect.forever,
      Effect.forkScoped
    )

    /** Wake-ups of the organization: after each commit of its events here or elsewhere, and periodically. */
    const changes = (organizationId: OrganizationId): Stream.Stream<void> =>
      Stream.asyncPush<void>((emit) =>
        Effect.acquireRelease(
          Effect.sync(() => {
            const wake = () => void emit.single(undefined)
            const set = listeners.get(organizationId) ?? new Set()
            set.add(wake)
            listeners.set(organizationId, set)
            return wake
          }),
          (wake) =>
            Effect.sync(() => {
              const set = listeners.get(organizationId)
              set?.delete(wake)
              if (set?.size === 0) listeners.delete(organizationId)
            })
        ), { bufferSize: 1, strategy: "sliding" })

    const join = (organizationId: string, follower: Follower, position: bigint) => {
      let tail = tails.get(organizationId)
      if (tail === undefined) {
        tail = { position, followers: new Set(), busy: false, again: false, retry: undefined, backoff: 2 }
        tails.set(organizationId, tail)
      }
      tail.followers.add(follower)
      // what committed since the follower's last read (its notification may have come before the tail existed)
      pump(organizationId, tail)
      return tail
    }

    const leave = (organizationId: string, follower: Follower) => {
      const tail = tails.get(organizationId)
      if (tail === undefined) return
      tail.followers.delete(follower)
      if (tail.followers.size === 0) {
        clearTimeout(tail.retry)
        tails.delete(organizationId)
      }
    }

    /**
     * The organization's events after `after` that `accept` takes, in order, without end: first read on its
     * own up to the present, then from the organization's tail on this node. A stream that falls behind
     * its tail by BUFFER_MAX events leaves it and catches up on its own again.
     */
    const follow = (
      organizationId: OrganizationId,
      after: bigint,
      accept: (e: EventRecord) => boolean,
      taskId?: TaskId
    ): Stream.Stream<EventRecord, Gone> => {
      let cursor = after
      let phase: "catchUp" | "joining" | "tail" = "catchUp"
      let joinedAt = 0n
      const follower: Follower = { accept, buffer: [], detached: false, wake: undefined }
      const own = Effect.suspend(() => {
        const from = cursor
        return Effect.map(
          Effect.flatMap(repo.read(organizationId, from, PAGE, taskId), (page) => checked(page, from)),
          (page) => {
            cursor = page.next
            return page
          }
        )
      })
      const waitForWake = Effect.async<void>((resume) => {
        if (follower.buffer.length > 0 || follower.detached) return resume(Effect.void)
        follower.wake = () => {
          follower.wake = undefined
          resume(Effect.void)
        }
        return Effect.sync(() => {
          follower.wake = undefined
        })
      })
      const step: Effect.Effect<Chunk.Chunk<EventRecord>, Option.Option<Gone>> = Effect.suspend(() => {
        if (phase === "catchUp") {
          return Effect.map(own, (page) => {
            if (!page.full) {
              follower.detached = false
              joinedAt = join(organizationId, follower, cursor).position
              phase = "joining"
            }
            return Chunk.fromIterable(page.events.filter(accept))
          })
        }
        if (phase === "joining") {
          // the tail was ahead when this stream joined: read up to where it was, the rest comes from it
          if (cursor >= joinedAt) {
            phase = "tail"
            return Effect.succeed(Chunk.empty())
          }
          return Effect.map(own, (page) => Chunk.fromIterable(page.events.filter(accept)))
        }
        const taken = follower.buffer
        follower.buffer = []
        const fresh = taken.filter((e) => e.id > cursor)
        if (fresh.length > 0) cursor = fresh[fresh.length - 1]!.id
        if (follower.detached) phase = "catchUp"
        return fresh.length > 0 || phase === "catchUp" ? Effect.succeed(Chunk.fromIterable(fresh)) : Effect.as(
          waitForWake,
          Chunk.empty()
        )
      }).pipe(Effect.mapError(Option.some))
      return Stream.repeatEffectChunkOption(step).pipe(
        Stream.ensuring(Effect.sync(() => leave(organizationId, follower)))
      )
    }

    /** The position of "now" in the organization's log: reading after it gives what commits from here on. */
    const position = (_organizationId: OrganizationId) => repo.now

    return { read, changes, follow, position } as const
  }),
  dependencies: [EventRepo.Default]
}) {}
