import { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, Stream } from "effect"
import { Readable } from "node:stream"
import type { Gone } from "../../schema/Errors.js"
import { taskEndTypes } from "../../schema/Events.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import type { Drain } from "../http/Drain.js"
import type { EventLog } from "./EventLog.js"
import type { EventRecord } from "./EventRepo.js"
import type { Subscribe } from "./EventTails.js"

/**
 * The one server-sent events writer (docs/guides/events.md): the framing of log events, and the response
 * around them, for `GET /v1/events`, `GET /v1/tasks/{id}/events` and the streamed invoke (InvokeStream.ts).
 */

/** Seconds between heartbeat comments: under the idle timeouts of common proxies (60 s) with room to spare. */
const HEARTBEAT_S = 15
/** The reconnection delay suggested to clients (`retry:`), in milliseconds. */
const RETRY_MS = 2000

// a record read by an organization's tail is handed to every stream following it: framed once for them all
const frames = new WeakMap<EventRecord, string>()
const frameBytes = new WeakMap<EventRecord, Buffer>()
const joined = new WeakMap<EventRecord, { readonly events: ReadonlyArray<EventRecord>; readonly bytes: Buffer }>()

/** An event of the log: `id:` (resume after it with `Last-Event-ID`), `event:` its type, `data:` its JSON. */
export const sseEvent = (e: EventRecord) => {
  let frame = frames.get(e)
  if (frame === undefined) {
    frame = `id: ${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`
    frames.set(e, frame)
  }
  return frame
}

/** The frame's bytes, encoded once for every stream: one read's events to one stream are one write. */
export const sseEventBytes = (events: ReadonlyArray<EventRecord>): Buffer => {
  if (events.length === 1) {
    const e = events[0]!
    let bytes = frameBytes.get(e)
    if (bytes === undefined) {
      bytes = Buffer.from(sseEvent(e))
      frameBytes.set(e, bytes)
    }
    return bytes
  }
  // the streams of one read mostly take the same events: joined once for them all (same records, same order)
  const cached = joined.get(events[0]!)
  if (
    cached !== undefined &&
    (cached.events === events ||
      (cached.events.length === events.length && cached.events.every((e, i) => e === events[i])))
  ) return cached.bytes
  const bytes = Buffer.concat(events.map((e) => sseEventBytes([e])))
  joined.set(events[0]!, { events, bytes })
  return bytes
}

/** A stream cut short (events pruned under a slow reader): said in the stream, then it ends. */
export const sseFailure = (error: Gone) =>
  `event: error\ndata: ${JSON.stringify({ error: { code: error.code, message: error.message } })}\n\n`

/**
 * Log events framed, the events of one read as one write (`eachApart`: each event its own frame, for a
 * writer that puts something between them); a failure ending them said in the stream.
 */
export const framed = (events: Stream.Stream<EventRecord, Gone>, eachApart = false): Stream.Stream<string> =>
  events.pipe(
    Stream.mapChunks((chunk) =>
      eachApart
        ? Chunk.map(chunk, sseEvent)
        : Chunk.isEmpty(chunk)
        ? Chunk.empty()
        : Chunk.of(Chunk.join(Chunk.map(chunk, sseEvent), ""))
    ),
    Stream.catchAll((e) => Stream.make(sseFailure(e)))
  )

/**
 * Heartbeats of every stream of the process from one timer: each stream is in one of `periodS` buckets and
 * each second one bucket beats, so a node with many streams writes 1/periodS of their heartbeats each second
 * instead of waking every stream every second (1,000 streams woken at once held up other requests).
 */
export const makeHeartbeats = (periodS: number) => {
  const buckets = Array.from({ length: periodS }, () => new Set<() => void>())
  let joined = 0
  let open = 0
  let tick = 0
  let timer: ReturnType<typeof setInterval> | undefined
  return (beat: () => void): () => void => {
    const bucket = buckets[joined++ % periodS]!
    bucket.add(beat)
    if (open++ === 0) {
      timer = setInterval(() => {
        for (const f of buckets[tick++ % periodS]!) f()
      }, 1000)
      timer.unref()
    }
    return () => {
      if (!bucket.delete(beat)) return
      if (--open === 0) clearInterval(timer)
    }
  }
}
const heartbeats = makeHeartbeats(HEARTBEAT_S)

const HEARTBEAT = Buffer.from(": heartbeat\n\n")
/**
 * A heartbeat that also moves the client's last event id to where the stream is (an `id:` without `data:`
 * dispatches no event, but EventSource keeps the id): a stream whose filter matched nothing for a while then
 * resumes from there, not from an old event (410 once pruned) or, having seen none, from "now" (a gap).
 */
const positionBeat = (position: bigint) => Buffer.from(`: heartbeat\nid: ${position}\n\n`)
const RETRY = Buffer.from(`retry: ${RETRY_MS}\n\n`)
const HEADERS = { "cache-control": "no-cache", "x-accel-buffering": "no" } as const

/**
 * The response of a followed log (`GET /v1/events`), as `eventStreamResponse` writes it but with no Effect
 * stream per client: a node Readable that the organization's tail pushes the events' shared bytes into
 * (EventLog.subscribe), and that @effect/platform-node pipes to the socket. The socket's backpressure
 * stops the pushes (the tail buffers, then detaches a reader that falls BUFFER_MAX behind: it reads on its
 * own when it reads again). `retry:` first, heartbeats while idle, the end at a drain (or after an event
 * `until` takes), a failure said in the stream; a client that goes away leaves the tail.
 */
export const followResponse = (
  drain: Drain,
  subscribe: Subscribe,
  options: { readonly until?: (e: EventRecord) => boolean; readonly headers?: Readonly<Record<string, string>> } = {}
) => {
  const { until } = options
  let subscription: ReturnType<Subscribe> | undefined
  let ended = false
  let stopBeats: (() => void) | undefined
  let stopDrain: (() => void) | undefined
  const release = () => {
    stopBeats?.()
    stopDrain?.()
    subscription?.close()
  }
  const end = () => {
    if (ended) return
    ended = true
    release()
    body.push(null)
  }
  const body = new Readable({
    read() {
      if (ended) return
      if (subscription === undefined) {
        // the response is being written: only now does it join (an answer never sent holds nothing)
        if (drain.isDraining()) return end()
        // a beat only when nothing waits to be written: a client that reads nothing gets nothing more
        const beat = () => {
          if (ended || body.readableLength > 0) return
          const at = subscription?.position()
          body.push(at === undefined ? HEARTBEAT : positionBeat(at))
        }
        // at a drain, the client reconnects elsewhere: from where this stream is (after what waits to be written)
        stopDrain = drain.onDrain(() => {
          const at = ended ? undefined : subscription?.position()
          if (at !== undefined) body.push(`id: ${at}\n\n`)
          end()
        })
        stopBeats = heartbeats(beat)
        subscription = subscribe({
          events: (events) => {
            if (ended) return false
            const last = until === undefined ? -1 : events.findIndex(until)
            if (last < 0) return body.push(sseEventBytes(events))
            body.push(sseEventBytes(events.slice(0, last + 1)))
            end()
            return false
          },
          end: (error) => {
            if (ended) return
            if (error !== undefined) body.push(sseFailure(error))
            end()
          }
        })
      }
      subscription.request()
    },
    destroy(error, callback) {
      ended = true
      release()
      callback(error)
    }
  })
  body.push(RETRY)
  return HttpServerResponse.raw(body, {
    contentType: "text/event-stream",
    headers: { ...options.headers, ...HEADERS }
  })
}

/**
 * The response: `retry:`, the frames, heartbeats; it ends with `frames`, or at a drain (clients reconnect
 * to another node with their Last-Event-ID).
 */
export const eventStreamResponse = (
  drain: Drain,
  frames: Stream.Stream<string>,
  headers: Readonly<Record<string, string>> = {}
) => {
  // heartbeats until the node drains: then the stream ends (clients reconnect elsewhere)
  const ticks = Stream.suspend(() =>
    drain.isDraining() ? Stream.empty : Stream.async<string>((emit) => {
      const stopBeats = heartbeats(() => void emit.single(": heartbeat\n\n"))
      const stopDrain = drain.onDrain(() => void emit.end())
      return Effect.sync(() => {
        stopBeats()
        stopDrain()
      })
    })
  )
  const body = Stream.concat(
    Stream.make(`retry: ${RETRY_MS}\n\n`),
    Stream.merge(frames, ticks, { haltStrategy: "either" })
  )
  return HttpServerResponse.stream(Stream.encodeText(body), {
    contentType: "text/event-stream",
    headers: { ...headers, ...HEADERS }
  })
}

/**
 * A task's events after `after`, ending after its end. A task that ended without its end in the log (before
 * the log existed, or pruned) gives what is kept, then the stream ends: it must not wait for an end that
 * will never come.
 */
export const taskEvents = (
  log: EventLog,
  organizationId: OrganizationId,
  id: TaskId,
  after: bigint,
  task: { readonly status: string; readonly has_end: boolean }
): Stream.Stream<EventRecord, Gone> => {
  const ended = ["completed", "error", "cancelled"].includes(task.status)
  return ended && !task.has_end
    ? Stream.paginateChunkEffect(after, (cursor) =>
      Effect.map(
        log.read(organizationId, cursor, { taskId: id }),
        (page) => [Chunk.fromIterable(page.events), page.full ? Option.some(page.next) : Option.none()] as const
      ))
    : log.follow(organizationId, after, (e) => e.taskId === id, id).pipe(
      Stream.takeUntil((e) => taskEndTypes.has(e.type))
    )
}

/**
 * Whether an `Accept` header asks for an event stream: it names `text/event-stream` (any case, parameters
 * aside) without `q=0`. Wildcards do not count: a client that takes anything gets what it got before.
 */
export const acceptsEventStream = (accept: string | undefined): boolean =>
  accept !== undefined && accept.split(",").some((range) => {
    const [type, ...params] = range.split(";").map((part) => part.trim().toLowerCase())
    return type === "text/event-stream" && !params.some((p) => /^q=0(\.0*)?$/.test(p))
  })
