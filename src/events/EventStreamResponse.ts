import { HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Option, Stream } from "effect"
import type { Gone } from "../../schema/Errors.js"
import { taskEndTypes } from "../../schema/Events.js"
import type { OrganizationId, TaskId } from "../../schema/Ids.js"
import type { Drain } from "../http/Drain.js"
import type { EventLog } from "./EventLog.js"
import type { EventRecord } from "./EventRepo.js"

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

/** An event of the log: `id:` (resume after it with `Last-Event-ID`), `event:` its type, `data:` its JSON. */
export const sseEvent = (e: EventRecord) => {
  let frame = frames.get(e)
  if (frame === undefined) {
    frame = `id: ${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`
    frames.set(e, frame)
  }
  return frame
}

/** A stream cut short (events pruned under a slow reader): said in the stream, then it ends. */
export const sseFailure = (error: Gone) =>
  `event: error\ndata: ${JSON.stringify({ error: { code: error.code, message: error.message } })}\n\n`

/** Log events framed, the events of one read as one write; a failure ending them said in the stream. */
export const framed = (events: Stream.Stream<EventRecord, Gone>): Stream.Stream<string> =>
  events.pipe(
    Stream.mapChunks((chunk) =>
      Chunk.isEmpty(chunk) ? Chunk.empty() : Chunk.of(Chunk.join(Chunk.map(chunk, sseEvent), ""))
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
    headers: { ...headers, "cache-control": "no-cache", "x-accel-buffering": "no" }
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
