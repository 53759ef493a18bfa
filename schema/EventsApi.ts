import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { JSONSchema, Schema } from "effect"
import { BadRequestWire, ForbiddenWire, GoneWire, NotFoundWire } from "./Errors.js"
import { Event, eventTypes } from "./Events.js"
import { AgentId, TaskId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { Authentication } from "./Security.js"

/** An event stream's body; each event's `data:` is an `Event` (see `documentEvents`). */
const STREAM_DESCRIPTION = "Server-sent events: per event `id:` (its id), `event:` (its type) and `data:` (an " +
  "`Event` as JSON, schema `Event`); `retry:` once, and a `: heartbeat` comment every 15 s. See docs/guides/events.md."
const EventStream = HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
  description: STREAM_DESCRIPTION
})

const LastEventIdHeader = Schema.Struct({
  "last-event-id": Schema.optional(Schema.String).annotations({
    description: "Resume after this event id (EventSource sends it on reconnecting); `0`: from the oldest kept. " +
      "Without it, the organization stream starts now and a task's stream from its first event."
  })
})

export const StreamEventsParams = Schema.Struct({
  types: Schema.optional(Schema.String).annotations({
    description: `Only these types, comma-separated: ${eventTypes.join(", ")}.`
  }),
  agent_id: Schema.optional(AgentId).annotations({ description: "Only events of this agent's tasks." }),
  last_event_id: Schema.optional(Schema.String).annotations({
    description: "As the `Last-Event-ID` header, for clients that cannot set it; the header wins."
  })
})

export const StreamTaskEventsParams = Schema.Struct({
  last_event_id: StreamEventsParams.fields.last_event_id
})

const streamResponse = (operation: Record<string, any>) => {
  const ok = operation.responses["200"]
  ok.content = {
    "text/event-stream": {
      schema: { type: "string", description: STREAM_DESCRIPTION },
      "x-event-data": { $ref: "#/components/schemas/Event" }
    }
  }
  return operation
}

export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("streamEvents", "/events")
      .annotateContext(
        operation({
          summary: "Stream the organization's events",
          permission: Policy.anyMember,
          errors: ["invalid_last_event_id", "events_expired", "not_found", "forbidden"],
          access: "Events are filtered by what the key may see: audit events for Admins and above. `types` naming " +
            "a type the key is never shown (audit records for a Member) is 403; an `agent_id` it cannot see, 404."
        })
      )
      .setUrlParams(StreamEventsParams)
      .setHeaders(LastEventIdHeader)
      .addSuccess(EventStream)
      .annotate(
        OpenApi.Description,
        "The organization's events as they are committed, in order, as server-sent events. A reader that " +
          "resumes with `Last-Event-ID` gets every event after it, none twice. Role-filtered: task and approval " +
          "events of the agents the key may use; connection events of organizational connections and the " +
          "caller's own; audit events for Admins and above."
      )
      .annotate(OpenApi.Transform, streamResponse)
  )
  .add(
    HttpApiEndpoint.get("streamTaskEvents", "/tasks/:task_id/events")
      .annotateContext(
        operation({
          summary: "Stream a task's events",
          permission: Policy.anyMember,
          errors: ["invalid_last_event_id", "events_expired"]
        })
      )
      .setPath(Schema.Struct({ task_id: TaskId }))
      .setUrlParams(StreamTaskEventsParams)
      .setHeaders(LastEventIdHeader)
      .addSuccess(EventStream)
      .addSuccess(HttpApiSchema.NoContent.annotations({
        description: "The task has ended and `Last-Event-ID` is at or after its last event: nothing more will " +
          "come (an EventSource stops reconnecting)."
      }))
      .annotate(
        OpenApi.Description,
        "One task's events (task.*, approval.*) from its first, or after `Last-Event-ID`, as server-sent " +
          "events; the stream ends after the task's end (task.completed, task.error or task.cancelled). " +
          "Resumed at or after the end: 204, which tells an EventSource to stop reconnecting."
      )
      .annotate(OpenApi.Transform, streamResponse)
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(GoneWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Events")
  .annotate(
    OpenApi.Description,
    "The event log as server-sent events: the organization's, or one task's (docs/guides/events.md)."
  )
{}

/**
 * Adds the event schemas to the OpenAPI document's components (`Event` and one schema per type): the
 * streams declare their body as text, and name `Event` as each event's `data:`.
 */
export const documentEvents = (spec: Record<string, any>) => {
  const definitions: Record<string, any> = {}
  // `Event` has an identifier: it lands in `definitions` with the schemas it refers to
  JSONSchema.fromAST(Event.ast, { definitions, definitionPath: "#/components/schemas/" })
  spec.components ??= {}
  spec.components.schemas = { ...spec.components.schemas, ...definitions }
  return spec
}
