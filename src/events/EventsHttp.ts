import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Stream } from "effect"
import { Api } from "../../schema/Api.js"
import { BadRequest, Forbidden, type Gone, NotFound } from "../../schema/Errors.js"
import { eventTypes, taskEndTypes } from "../../schema/Events.js"
import type { AgentId, TaskId } from "../../schema/Ids.js"
import { Principal } from "../../schema/Security.js"
import { AgentRepo } from "../agents/AgentRepo.js"
import { mayUse, requireFilterAgent } from "../agents/Agents.js"
import { Drain } from "../http/Drain.js"
import { validationError } from "../support/Issues.js"
import { EventLog } from "./EventLog.js"
import type { EventPage, EventRecord } from "./EventRepo.js"
import { EventRepo } from "./EventRepo.js"
import { eventStreamResponse, followResponse, framed, taskEvents } from "./EventStreamResponse.js"
import type { Accept } from "./EventTails.js"
import { unseenType, visibilityKey, visibleTo } from "./EventVisibility.js"

const MAX_ID = 2n ** 63n - 1n

const known = new Set<string>(eventTypes)

const taskEnded = (status: string) => status === "completed" || status === "error" || status === "cancelled"

/** A `Last-Event-ID` given: empty is none, as the SSE specification reads an empty id (a reset). */
const given = (text: string | undefined) => {
  const trimmed = text?.trim()
  return trimmed === "" ? undefined : trimmed
}

/** `Last-Event-ID` (the header wins over `last_event_id`): a position, or undefined without one. */
const positionOf = (header: string | undefined, param: string | undefined) => {
  const text = given(header) ?? given(param)
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

/**
 * A position at or past every event committed so far names no event a stream sent: following it would skip,
 * unnoticed, every event until the log caught up with it.
 */
const notAhead = (page: EventPage, after: bigint | undefined) =>
  after === undefined || after === 0n || after < page.below ? Effect.void : Effect.fail(
    BadRequest.of(
      `\`Last-Event-ID\` ${after} is past every event committed so far: send an id a stream sent, or 0 for the ` +
        "oldest kept.",
      undefined,
      "invalid_last_event_id"
    )
  )

const typesOf = (param: string | undefined) => {
  if (param === undefined || param.trim() === "") return Effect.succeed(undefined)
  const types = param.split(",").map((t) => t.trim()).filter((t) => t !== "")
  const unknown = types.filter((t) => !known.has(t))
  return unknown.length === 0
    ? Effect.succeed(new Set(types))
    : Effect.fail(
      new BadRequest(validationError([{
        path: ["types"],
        message: `unknown event type(s) ${unknown.join(", ")}; known: ${eventTypes.join(", ")}`
      }]))
    )
}

export const EventsHttpLive = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function*() {
    const log = yield* EventLog
    const repo = yield* EventRepo
    const drain = yield* Drain
    const agents = yield* AgentRepo

    /** The response (EventStreamResponse.ts): `retry:`, the events, heartbeats; it ends with them or at a drain. */
    const respond = (events: Stream.Stream<EventRecord, Gone>) => eventStreamResponse(drain, framed(events))

    return handlers
      .handle("streamEvents", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const after = yield* positionOf(headers["last-event-id"], urlParams.last_event_id)
          const types = yield* typesOf(urlParams.types)
          const unseen = [...types ?? []].flatMap((t) => {
            const why = unseenType(principal, t)
            return why === undefined ? [] : [`${t}: ${why}`]
          })
          if (unseen.length > 0) {
            return yield* Forbidden.of(`\`types\` names events this key is never shown (${unseen.join("; ")}).`)
          }
          const agentId = urlParams.agent_id
          // an agent the key cannot see would be followed in silence, as a type it is never shown; and so would
          // types that no agent's task has (audit records, connections)
          if (agentId !== undefined) {
            if (types !== undefined && ![...types].some((t) => t.startsWith("task.") || t.startsWith("approval."))) {
              return yield* new BadRequest(validationError([{
                path: ["types"],
                message: "`agent_id` keeps the events of an agent's tasks (task.*, approval.*): name one of those " +
                  "types too, or leave out `agent_id`"
              }]))
            }
            yield* requireFilterAgent(agents, principal, agentId)
          }
          const visible = visibleTo(principal)
          const accept: Accept = Object.assign(
            (e: EventRecord) =>
              (types === undefined || types.has(e.type)) && (agentId === undefined || e.agentId === agentId) &&
              visible(e),
            {
              key: JSON.stringify([
                types === undefined ? null : [...types].sort(),
                agentId ?? null,
                visibilityKey(principal)
              ])
            }
          )
          const start = after ?? (yield* log.position(principal.organizationId))
          // a position pruned already is answered 410 before the stream begins, one ahead of the log 400
          yield* Effect.flatMap(
            log.read(principal.organizationId, start, { limit: 1 }),
            (page) => notAhead(page, after)
          )
          // pushed by the tail into the response (no Effect stream per client: 1,000 of them cost a node)
          return followResponse(drain, log.subscribe(principal.organizationId, start, accept))
        }))
      .handle("streamTaskEvents", ({ headers, path, urlParams }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const id: TaskId = path.task_id
          const after = (yield* positionOf(headers["last-event-id"], urlParams.last_event_id)) ?? 0n
          const task = yield* repo.task(principal.organizationId, id)
          if (task === undefined || !mayUse(principal, task.agent_id as AgentId)) return yield* NotFound.of("Task", id)
          const next = yield* Effect.tap(
            log.read(principal.organizationId, after, { limit: 1, taskId: id }),
            (page) => notAhead(page, after)
          )
          // resumed at or after its end (an EventSource reconnects when the stream ends), or after the last kept
          // event of a task that ended without its end in the log: nothing more will come. 204 tells an
          // EventSource to stop reconnecting (a stream that ends has it reconnect every `retry:` for good)
          const ended = task.end_id !== null
            ? after >= BigInt(task.end_id)
            : taskEnded(task.status) && next.events.length === 0 && !next.pending
          if (ended) return HttpServerResponse.empty({ status: 204 })
          // a task that ended without its end in the log gives what is kept (taskEvents); else its tail's pushes
          return task.has_end || !taskEnded(task.status)
            ? followResponse(drain, log.subscribe(principal.organizationId, after, (e) => e.taskId === id, id), {
              until: (e) => taskEndTypes.has(e.type)
            })
            : respond(taskEvents(log, principal.organizationId, id, after, task))
        }))
  })).pipe(Layer.provide(EventLog.Default), Layer.provide(EventRepo.Default), Layer.provide(AgentRepo.Default))
