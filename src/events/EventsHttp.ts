import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Layer, Option, Schedule, Stream } from "effect"
import { Api } from "../../schema/Api.js"
import { BadRequest, type Gone, NotFound } from "../../schema/Errors.js"
import { eventTypes, taskEndTypes } from "../../schema/Events.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import { Principal } from "../../schema/Security.js"
import { mayUse } from "../agents/Agents.js"
import { Drain } from "../http/Drain.js"
import { EventLog } from "./EventLog.js"
import type { EventRecord } from "./EventRepo.js"
import { EventRepo } from "./EventRepo.js"
import { visibleTo } from "./EventVisibility.js"

/** Seconds between heartbeat comments: under the idle timeouts of common proxies (60 s) with room to spare. */
const HEARTBEAT_S = 15
/** The reconnection delay suggested to clients (`retry:`), in milliseconds. */
const RETRY_MS = 2000
const MAX_ID = 2n ** 63n - 1n

const known = new Set<string>(eventTypes)

/** `Last-Event-ID` (the header wins over `last_event_id`): a position, or undefined without one. */
const positionOf = (header: string | undefined, param: string | undefined) => {
  const text = (header ?? param)?.trim()
  if (text === undefined) return Effect.succeed(undefined)
  if (/^(0|[1-9][0-9]{0,18})$/.test(text) && BigInt(text) <= MAX_ID) return Effect.succeed(BigInt(text))
  return Effect.fail(
    BadRequest.of(
      "`Last-Event-ID` must be an event id a stream sent (a decimal integer), or 0 for the oldest kept.",
      undefined,
      "invalid_last_event_id"
    )
  )
}

const typesOf = (param: string | undefined) => {
  if (param === undefined || param.trim() === "") return Effect.succeed(undefined)
  const types = param.split(",").map((t) => t.trim()).filter((t) => t !== "")
  const unknown = types.filter((t) => !known.has(t))
  return unknown.length === 0
    ? Effect.succeed(new Set(types))
    : Effect.fail(
      BadRequest.of(`Unknown event type(s): ${unknown.join(", ")}. Known: ${eventTypes.join(", ")}.`, {
        issues: [{ path: ["types"], message: `unknown event type(s): ${unknown.join(", ")}` }]
      }, "validation_failed")
    )
}

const sse = (e: EventRecord) => `id: ${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`

/** A stream cut short (events pruned under a slow reader): said in the stream, then it ends. */
const failure = (error: Gone) =>
  `event: error\ndata: ${JSON.stringify({ error: { code: error.code, message: error.message } })}\n\n`

export const EventsHttpLive = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function*() {
    const log = yield* EventLog
    const repo = yield* EventRepo
    const drain = yield* Drain

    /**
     * The response: `retry:`, the events, heartbeats; it ends with `events`, or at a drain (clients
     * reconnect to another node with their Last-Event-ID).
     */
    const respond = (events: Stream.Stream<EventRecord, Gone>) => {
      const ticks = Stream.fromSchedule(Schedule.spaced("1 second")).pipe(
        Stream.takeWhile(() => !drain.draining),
        Stream.filter((n) => n % HEARTBEAT_S === HEARTBEAT_S - 1),
        Stream.map(() => ": heartbeat\n\n")
      )
      const body = Stream.concat(
        Stream.make(`retry: ${RETRY_MS}\n\n`),
        Stream.merge(
          events.pipe(Stream.map(sse), Stream.catchAll((e) => Stream.make(failure(e)))),
          ticks,
          { haltStrategy: "either" }
        )
      )
      return HttpServerResponse.stream(Stream.encodeText(body), {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    }

    return handlers
      .handle("streamEvents", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const after = yield* positionOf(headers["last-event-id"], urlParams.last_event_id)
          const types = yield* typesOf(urlParams.types)
          const agentId = urlParams.agent_id
          const visible = visibleTo(principal)
          const accept = (e: EventRecord) =>
            (types === undefined || types.has(e.type)) && (agentId === undefined || e.agentId === agentId) &&
            visible(e)
          const start = after ?? (yield* log.position(principal.organizationId))
          // a position pruned already is answered 410 before the stream begins
          yield* log.read(principal.organizationId, start, { limit: 1 })
          return respond(log.follow(principal.organizationId, start, accept))
        }))
      .handle("streamTaskEvents", ({ headers, path, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const id: TaskId = path.task_id
          const after = (yield* positionOf(headers["last-event-id"], urlParams.last_event_id)) ?? 0n
          const task = yield* repo.task(principal.organizationId, id)
          if (task === undefined || !mayUse(principal, task.agent_id as AgentId)) return yield* NotFound.of("Task", id)
          yield* log.read(principal.organizationId, after, { limit: 1, taskId: id })
          const accept = (e: EventRecord) => e.taskId === id
          const ended = ["completed", "error", "cancelled"].includes(task.status)
          const events = ended && !task.has_end
            // ended before the log had its end (an older release, or pruned): what is kept, then the end
            ? Stream.paginateChunkEffect(after, (cursor) =>
              Effect.map(
                log.read(principal.organizationId, cursor, { taskId: id }),
                (page) => [Chunk.fromIterable(page.events), page.full ? Option.some(page.next) : Option.none()] as const
              ))
            : log.follow(principal.organizationId, after, accept, id).pipe(
              Stream.takeUntil((e) => taskEndTypes.has(e.type))
            )
          return respond(events)
        }))
  })).pipe(Layer.provide(EventLog.Default), Layer.provide(EventRepo.Default))
