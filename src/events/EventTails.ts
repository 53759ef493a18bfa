import { Cause, Chunk, Effect, Option, Stream } from "effect"
import type { Gone } from "../../schema/Errors.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import type { EventPage, EventRecord, EventRepo } from "./EventRepo.js"

/**
 * Which events a stream takes. With a `key`, streams whose filters have the same key take the same events (the
 * key names everything the filter depends on): a read filters its page once per key, not once per stream.
 */
export type Accept = ((e: EventRecord) => boolean) & { readonly key?: string }

/** How a stream follows its organization's tail (EventLog.subscribe): the sink its events are pushed to. */
export type Subscribe = (sink: {
  readonly events: (events: ReadonlyArray<EventRecord>) => boolean
  readonly end: (error: Gone | undefined) => void
}) => {
  readonly request: () => void
  readonly close: () => void
  readonly buffered: () => number
  /**
   * A position every event it accepts up to has been handed to the sink (those after it come later), while it
   * is caught up in its tail with nothing waiting; else undefined. A quiet stream's client resumes from it.
   */
  readonly position: () => bigint | undefined
}

/** Events per read. */
export const PAGE = 500
/** A follower this far behind its tail leaves it and reads on its own until it catches up. */
const BUFFER_MAX = 5000
/**
 * Reads of one tail start at least this far apart: under load, the commits of a few milliseconds go in one
 * read instead of one read each (a read per commit cost the node a third of its task throughput).
 */
const READ_GAP_MS = 5
/**
 * Reads of a tail that woke many streams wait longer, this much per stream its last read woke (up to
 * READ_GAP_MAX_MS), so that more events go in each write: waking a stream costs ~20 µs, most of it the socket
 * write, whatever it carries, so a tail's hand-outs take under a tenth of a core. A few streams are read every
 * READ_GAP_MS; 1,000 streams following every event of a busy organization 4 times a second instead of ~15.
 */
const READ_GAP_PER_STREAM_MS = 0.25
/** Reads of a busy tail wait at most this long (the latency its streams see at worst, catching up aside). */
const READ_GAP_MAX_MS = 1000

/**
 * Followers woken in one go, at most: a read's hand-out to more is spread over turns of the event loop, so
 * that the requests and replies that arrive meanwhile are not held up behind the writes to every stream
 * (~2.8 µs a stream: 1,000 streams held the loop ~3 ms per read).
 */
const WAKE_SLICE = 16

/** A stream's subscription to its organization's tail. */
interface Follower {
  readonly accept: Accept
  /** Shared with other followers (a read's events for a key): replaced, never pushed to. */
  buffer: ReadonlyArray<EventRecord>
  detached: boolean
  wake: (() => void) | undefined
  /** Waits in its tail's hand-out (`Tail.waking`) for its wake. */
  queued: boolean
}

/** One reader per organization on this node, for all of its streams here: one read per change, not one per stream. */
interface Tail {
  position: bigint
  readonly followers: Set<Follower>
  busy: boolean
  again: boolean
  retry: ReturnType<typeof setTimeout> | undefined
  backoff: number
  /** When its last read started (performance.now()). */
  started: number
  /** The time between reads: READ_GAP_MS, or more after a read that woke many streams. */
  gap: number
  /** A read is due once `gap` has passed. */
  due: ReturnType<typeof setTimeout> | undefined
  /** Followers with something new, still to be woken (WAKE_SLICE at a time), from `woke` on. */
  waking: Array<Follower>
  woke: number
  /** The rest of a hand-out waits for the next turn of the event loop. */
  handing: boolean
}

/**
 * The node's followers of event streams, by organization (EventLog.follow). A new stream reads on its own
 * up to the present, then joins its organization's tail; each wake-up of the organization reads once, from
 * the tail's position, and hands each follower the events it accepts. Positions only move through what was
 * read (or up to the bound below which nothing can still commit: EventRepo.read), so a follower that joins,
 * leaves or falls behind never skips an event; what it has seen twice (its own read and the tail's) is
 * dropped by id.
 */
export const makeTails = (options: {
  readonly repo: EventRepo
  readonly checked: (page: EventPage, after: bigint) => Effect.Effect<EventPage, Gone>
  readonly run: (effect: Effect.Effect<void>) => void
  /** A tail was created: its organization's commits must notify this node. */
  readonly created: (organizationId: string) => void
}) => {
  const { checked, repo, run } = options
  const tails = new Map<string, Tail>()

  /** Reads the tail (once a read is due; `behind`: at once, as a full page's rest is). */
  const pump = (organizationId: string, tail: Tail, behind = false): void => {
    if (tail.busy) {
      tail.again = true
      return
    }
    const wait = tail.started + tail.gap - performance.now()
    if (wait > 0 && !behind) {
      tail.due ??= setTimeout(() => {
        tail.due = undefined
        pump(organizationId, tail)
      }, wait)
      return
    }
    tail.started = performance.now()
    tail.busy = true
    tail.again = false
    run(
      repo.read(organizationId as OrganizationId, tail.position, PAGE).pipe(
        Effect.map((page) => {
          tail.busy = false
          if (tails.get(organizationId) !== tail) return
          // pruned under a tail (far behind, or a long pause): its followers find out on their own reads
          const lost = page.horizon > tail.position && tail.position !== 0n
          tail.position = page.next
          // the page filtered once per filter key: 1,000 streams with one filter cost one pass, not 1,000
          const byKey = new Map<string, ReadonlyArray<EventRecord>>()
          for (const f of tail.followers) {
            const before = f.buffer.length
            if (!lost && page.events.length > 0) {
              const key = f.accept.key
              let taken = key === undefined ? undefined : byKey.get(key)
              if (taken === undefined) {
                taken = page.events.filter(f.accept)
                if (key !== undefined) byKey.set(key, taken)
              }
              if (taken.length > 0) f.buffer = before === 0 ? taken : f.buffer.concat(taken)
            }
            if (lost || f.buffer.length > BUFFER_MAX) {
              f.detached = true
              tail.followers.delete(f)
            }
            // only a follower with something new: waking them all on every read cost each read O(streams)
            if ((f.buffer.length > before || f.detached) && !f.queued) {
              f.queued = true
              tail.waking.push(f)
            }
          }
          tail.gap = Math.min(
            Math.max(READ_GAP_MS, (tail.waking.length - tail.woke) * READ_GAP_PER_STREAM_MS),
            READ_GAP_MAX_MS
          )
          if (!tail.handing) handOut(tail)
          // a full page's rest is read at once: a tail paced for its streams must not fall behind the log
          if (page.full || tail.again) return pump(organizationId, tail, page.full)
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

  /**
   * Wakes the followers a read gave something, WAKE_SLICE at a time, the rest after the event loop's next
   * turn (a later read's followers join the same queue; each follower is in it once, and takes all its
   * tail buffered for it when its turn comes).
   */
  const handOut = (tail: Tail): void => {
    const end = Math.min(tail.woke + WAKE_SLICE, tail.waking.length)
    while (tail.woke < end) {
      const f = tail.waking[tail.woke++]!
      f.queued = false
      f.wake?.()
    }
    if (tail.woke < tail.waking.length) {
      if (tail.woke >= WAKE_SLICE * 16) {
        tail.waking = tail.waking.slice(tail.woke)
        tail.woke = 0
      }
      tail.handing = true
      setImmediate(() => handOut(tail))
      return
    }
    tail.waking = []
    tail.woke = 0
    tail.handing = false
  }

  /** A change of the organization (a notification, or the periodic safety net). */
  const woken = (organizationId: string) => {
    const tail = tails.get(organizationId)
    if (tail !== undefined) pump(organizationId, tail)
  }

  const join = (organizationId: string, follower: Follower, position: bigint) => {
    let tail = tails.get(organizationId)
    if (tail === undefined) {
      tail = {
        position,
        followers: new Set(),
        busy: false,
        again: false,
        retry: undefined,
        backoff: 2,
        started: 0,
        gap: READ_GAP_MS,
        due: undefined,
        waking: [],
        woke: 0,
        handing: false
      }
      tails.set(organizationId, tail)
      options.created(organizationId)
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
      clearTimeout(tail.due)
      tails.delete(organizationId)
    }
  }

  /**
   * One stream's position in the organization's log: it reads on its own (`read`) up to the present, then
   * takes what its tail hands it (`taken`). Both `follow` (an Effect stream) and `subscribe` (pushed to a
   * sink, what the SSE responses use) go through it.
   */
  const open = (
    organizationId: OrganizationId,
    after: bigint,
    accept: Accept,
    taskId?: TaskId
  ) => {
    let cursor = after
    let phase: "catchUp" | "joining" | "tail" = "catchUp"
    let joinedAt = 0n
    const follower: Follower = { accept, buffer: [], detached: false, wake: undefined, queued: false }
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
    /** Outside the tail: one read of its own (catching up, or up to where the tail was when it joined). */
    const read: Effect.Effect<ReadonlyArray<EventRecord>, Gone> = Effect.suspend(() => {
      if (phase === "catchUp") {
        return Effect.map(own, (page) => {
          if (!page.full) {
            follower.detached = false
            joinedAt = join(organizationId, follower, cursor).position
            phase = "joining"
          }
          return page.events.filter(accept)
        })
      }
      // the tail was ahead when this stream joined: read up to where it was, the rest comes from it
      if (cursor >= joinedAt) {
        phase = "tail"
        return Effect.succeed([])
      }
      return Effect.map(own, (page) => page.events.filter(accept))
    })
    /**
     * In the tail: what it handed over since (possibly nothing); undefined outside it (`read`). A follower
     * the tail detached goes back to reading on its own after this.
     */
    const taken = (): ReadonlyArray<EventRecord> | undefined => {
      if (phase !== "tail") return undefined
      const taken = follower.buffer
      if (taken.length > 0) follower.buffer = []
      const fresh = taken.length > 0 && taken[0]!.id <= cursor ? taken.filter((e) => e.id > cursor) : taken
      if (fresh.length > 0) cursor = fresh[fresh.length - 1]!.id
      if (follower.detached) phase = "catchUp"
      return fresh
    }
    return {
      follower,
      read,
      taken,
      reading: () => phase !== "tail",
      /** Where it is: every event it accepts up to here was handed over, in its tail or by its own reads. */
      caughtUpTo: (): bigint | undefined => {
        const tail = tails.get(organizationId)
        if (phase !== "tail" || follower.buffer.length > 0 || follower.detached || !tail?.followers.has(follower)) {
          return undefined
        }
        const at = tail.position > cursor ? tail.position : cursor
        // 0 would mean "from the oldest kept" to a client resuming with it
        return at > 0n ? at : undefined
      },
      close: () => leave(organizationId, follower)
    } as const
  }

  const follow = (
    organizationId: OrganizationId,
    after: bigint,
    accept: Accept,
    taskId?: TaskId
  ): Stream.Stream<EventRecord, Gone> => {
    const position = open(organizationId, after, accept, taskId)
    const { follower } = position
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
      const fresh = position.taken()
      if (fresh === undefined) return Effect.map(position.read, Chunk.fromIterable)
      return fresh.length > 0 || position.reading()
        ? Effect.succeed(Chunk.fromIterable(fresh))
        : Effect.as(waitForWake, Chunk.empty())
    }).pipe(Effect.mapError(Option.some))
    return Stream.repeatEffectChunkOption(step).pipe(Stream.ensuring(Effect.sync(position.close)))
  }

  /**
   * The same events as `follow`, pushed: no fiber or stream stage per stream while it waits. `request`
   * asks for events; `sink.events` takes them and answers whether it wants more now (false: it calls
   * `request` again when it does; meanwhile its tail buffers for it, and detaches it past BUFFER_MAX).
   * `sink.end` is called once, after a failure (the Gone of a pruned position; undefined for a defect,
   * logged). `close` leaves the tail; nothing is pushed after it.
   */
  const subscribe = (
    organizationId: OrganizationId,
    after: bigint,
    accept: Accept,
    taskId: TaskId | undefined,
    sink: {
      readonly events: (events: ReadonlyArray<EventRecord>) => boolean
      readonly end: (error: Gone | undefined) => void
    }
  ) => {
    const position = open(organizationId, after, accept, taskId)
    const { follower } = position
    let wanting = false
    let reading = false
    let closed = false
    const wake = () => {
      follower.wake = undefined
      advance()
    }
    const advance = (): void => {
      while (wanting && !closed && !reading) {
        const fresh = position.taken()
        if (fresh === undefined) {
          reading = true
          return run(
            position.read.pipe(
              Effect.matchCauseEffect({
                onSuccess: (events) =>
                  Effect.sync(() => {
                    reading = false
                    if (closed) return
                    if (events.length > 0) wanting = sink.events(events)
                    advance()
                  }),
                onFailure: (cause) => {
                  reading = false
                  if (closed) return Effect.void
                  closed = true
                  position.close()
                  const gone = Cause.failureOption(cause)
                  sink.end(Option.getOrUndefined(gone))
                  return Option.isSome(gone) ? Effect.void : Effect.logWarning("event stream read failed", cause)
                }
              })
            )
          )
        }
        if (fresh.length > 0) wanting = sink.events(fresh)
        else if (!position.reading()) follower.wake = wake
        if (follower.wake !== undefined) return
      }
    }
    return {
      request: () => {
        wanting = true
        if (follower.wake === undefined) advance()
      },
      close: () => {
        closed = true
        follower.wake = undefined
        position.close()
      },
      /** Events its tail holds for it (at most BUFFER_MAX and a read; none once detached and read on its own). */
      buffered: () => follower.buffer.length,
      position: () => closed || reading ? undefined : position.caughtUpTo()
    } as const
  }

  const close = () => {
    for (const tail of tails.values()) {
      clearTimeout(tail.retry)
      clearTimeout(tail.due)
      // a hand-out still under way wakes no one after this
      tail.waking = []
      tail.woke = 0
    }
    tails.clear()
  }

  return { follow, subscribe, woken, organizations: () => tails.keys(), close } as const
}
