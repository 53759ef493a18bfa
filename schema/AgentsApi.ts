import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  Agent,
  AgentList,
  AgentListParams,
  CreateAgent,
  InvokeAgent,
  LlmUsage,
  ModelProviderSettings,
  SetModelProvider,
  Task,
  TaskPage,
  TaskStatus,
  Thread,
  UpdateAgent
} from "./Agents.js"
import {
  BadRequestWire,
  ConflictWire,
  ForbiddenWire,
  NotFoundWire,
  PaymentRequiredWire,
  ServiceUnavailableWire
} from "./Errors.js"
import { AgentId, ScheduleId, TaskId } from "./Ids.js"
import { operation } from "./OperationDoc.js"
import { Policy } from "./Policy.js"
import { FlagParam, IntegerParam, NumberParam } from "./QueryParams.js"
import { Authentication } from "./Security.js"
import { DateParam } from "./Timestamp.js"

const AgentPath = Schema.Struct({ agent_id: AgentId })
const TaskPath = Schema.Struct({ task_id: TaskId })
const ProviderPath = Schema.Struct({ provider: Schema.Literal("openai", "openai-chat", "anthropic") })

/** The asynchronous invoke's answer: the task as accepted, `pending`; poll `GET /v1/tasks/{task_id}`. */
export class TaskAccepted extends Schema.Class<TaskAccepted>("TaskAccepted")(Task.fields) {}

/** Where an accepted task is read: the `Location` header of a 202 from an asynchronous invoke. */
export const taskLocation = (taskId: string) => `/v1/tasks/${taskId}`

/** The task id a `Location` of `taskLocation` names (absolute or not); undefined for anything else. */
export const taskIdOfLocation = (location: string | undefined) =>
  location === undefined ? undefined : /^(?:https?:\/\/[^/]+)?\/v1\/tasks\/([^/?#]+)$/.exec(location)?.[1]

/** A streamed invoke's body (issue 22): documented beside the JSON answer of the same 200. */
const INVOKE_STREAM_DESCRIPTION = "With `Accept: text/event-stream` (and without `asynchronous=true`): the task's " +
  "events as server-sent events, framed as `GET /v1/tasks/{task_id}/events` frames them (`id:`, `event:`, `data:` " +
  "an `Event`), from `task.created` to the task's end, after which the stream ends; between them the model's text " +
  "as `event: task.output.delta` with no `id:` (not stored, not resumable; `data:` a `TaskOutputDelta`: " +
  "`{type, data: {task_id, agent_id, step, text}}`). `Location` names the task. Refusals (400, 402, 404, 409) " +
  "come as JSON before any stream. See docs/guides/events.md, \"Streamed invoke\"."

const invokeStreamResponse = (operation: Record<string, any>) => {
  const ok = operation.responses["200"]
  ok.content = {
    ...ok.content,
    "text/event-stream": {
      schema: { type: "string", description: INVOKE_STREAM_DESCRIPTION },
      "x-event-data": { $ref: "#/components/schemas/Event" }
    }
  }
  return operation
}

export class AgentsApi extends HttpApiGroup.make("agents")
  .add(
    HttpApiEndpoint.get("listAgents", "/agents")
      .annotateContext(
        operation({
          summary: "List agents",
          permission: Policy.anyMember,
          errors: ["invalid_cursor"],
          access: "The agents the key may use: an organization key limited to agents sees those."
        })
      )
      .setUrlParams(AgentListParams)
      .addSuccess(AgentList)
      .annotate(OpenApi.Description, "List agents.")
  )
  .add(
    HttpApiEndpoint.post("createAgent", "/agents")
      .annotateContext(
        operation({ summary: "Create an agent", permission: Policy.createAgents, errors: ["invalid_skill"] })
      )
      .setPayload(CreateAgent)
      .addSuccess(Agent, { status: 201 })
      .annotate(OpenApi.Description, "Create an agent.")
  )
  .add(
    HttpApiEndpoint.get("getAgent", "/agents/:agent_id")
      .annotateContext(operation({ summary: "Get an agent", permission: Policy.anyMember, errors: [] }))
      .setPath(AgentPath)
      .addSuccess(Agent)
  )
  .add(
    HttpApiEndpoint.patch("updateAgent", "/agents/:agent_id")
      .annotateContext(
        operation({ summary: "Change an agent", permission: Policy.changeAgents, errors: ["invalid_skill"] })
      )
      .setPath(AgentPath)
      .setPayload(UpdateAgent)
      .addSuccess(Agent)
  )
  .add(
    HttpApiEndpoint.del("deleteAgent", "/agents/:agent_id")
      .annotateContext(operation({ summary: "Delete an agent", permission: Policy.deleteAgents, errors: [] }))
      .setPath(AgentPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(
        OpenApi.Description,
        "Delete the agent: its schedules are paused, and its tasks not ended yet (pending, executing, waiting " +
          "for approval) are cancelled, their approval requests withdrawn."
      )
  )
  .add(
    HttpApiEndpoint.post("invokeAgent", "/agents/:agent_id/invoke")
      .annotateContext(
        operation({
          summary: "Invoke an agent",
          permission: Policy.anyMember,
          errors: ["budget_exhausted", "invalid_idempotency_key", "idempotency_conflict"],
          access: "Any agent the key may use (an organization key limited to agents: those)."
        })
      )
      .setPath(AgentPath)
      .setUrlParams(Schema.Struct({
        asynchronous: Schema.optional(FlagParam).annotations({
          description: "`true`: return at once with the pending task (202). Otherwise wait for the answer."
        })
      }))
      .setHeaders(Schema.Struct({
        "idempotency-key": Schema.optional(Schema.String).annotations({
          description: "The same key and body return the same task; the same key with another body is a 409."
        })
      }))
      .setPayload(InvokeAgent)
      .addSuccess(Task)
      .addSuccess(TaskAccepted, { status: 202 })
      .addError(PaymentRequiredWire)
      .addError(ServiceUnavailableWire)
      .annotate(
        OpenApi.Description,
        "Invoke an agent (spec 4.6): synchronous (200, the finished task) or asynchronous (202). With " +
          "`Accept: text/event-stream`, streamed: the task's events and the model's text as they come (200)."
      )
      .annotate(OpenApi.Transform, invokeStreamResponse)
  )
  .add(
    HttpApiEndpoint.get("listTasks", "/tasks")
      .annotateContext(operation({
        summary: "List tasks",
        permission: Policy.anyMember,
        errors: ["not_found", "invalid_cursor", "invalid_time_range"]
      }))
      .setUrlParams(Schema.Struct({
        agent_id: Schema.optional(AgentId),
        status: Schema.optional(TaskStatus),
        user_id: Schema.optional(Schema.String),
        schedule_id: Schema.optional(ScheduleId).annotations({ description: "The runs of this schedule." }),
        created_after: Schema.optional(DateParam),
        created_before: Schema.optional(DateParam),
        limit: Schema.optional(IntegerParam(1, 200)),
        cursor: Schema.optional(Schema.String)
      }))
      .addSuccess(TaskPage)
      .annotate(OpenApi.Description, "Tasks, newest first.")
  )
  .add(
    HttpApiEndpoint.get("getTask", "/tasks/:task_id")
      .annotateContext(operation({ summary: "Get a task", permission: Policy.anyMember, errors: [] }))
      .setPath(TaskPath)
      .setUrlParams(Schema.Struct({
        wait: Schema.optional(NumberParam(0, 60)).annotations({
          description: "Long poll: hold the request up to this many seconds (0–60) until the task has ended."
        })
      }))
      .addSuccess(Task)
      .annotate(OpenApi.Description, "Read a task; with `wait`, answer as soon as it ends (or when `wait` runs out).")
  )
  .add(
    HttpApiEndpoint.post("cancelTask", "/tasks/:task_id/cancel")
      .annotateContext(
        operation({
          summary: "Cancel a task",
          permission: Policy.anyMember,
          errors: ["forbidden", "task_ended"],
          access: "A Member cancels only the tasks they invoked; Builders and above any task."
        })
      )
      .setPath(TaskPath)
      .addSuccess(Task)
      .annotate(
        OpenApi.Description,
        "Cancel a pending, running or waiting task: its model call and tool calls are interrupted, its approval " +
          "requests withdrawn. 409 `task_ended` once it has ended."
      )
  )
  .add(
    HttpApiEndpoint.get("getThread", "/tasks/:task_id/thread")
      .annotateContext(operation({ summary: "Get a task's thread", permission: Policy.anyMember, errors: [] }))
      .setPath(TaskPath)
      .addSuccess(Thread)
  )
  .add(
    HttpApiEndpoint.get("getLlmUsage", "/tasks/:task_id/llm_usage")
      .annotateContext(operation({ summary: "Get a task's model usage", permission: Policy.anyMember, errors: [] }))
      .setPath(TaskPath)
      .addSuccess(LlmUsage)
  )
  .add(
    HttpApiEndpoint.get("listModelProviders", "/model-providers")
      .annotateContext(operation({ summary: "List model provider settings", permission: Policy.anyMember, errors: [] }))
      .addSuccess(Schema.Array(ModelProviderSettings))
  )
  .add(
    HttpApiEndpoint.put("setModelProvider", "/model-providers/:provider")
      .annotateContext(
        operation({
          summary: "Set a model provider's endpoint and key",
          permission: Policy.configureModelProviders,
          errors: []
        })
      )
      .setPath(ProviderPath)
      .setPayload(SetModelProvider)
      .addSuccess(ModelProviderSettings)
      .annotate(OpenApi.Description, "The organization's endpoint and key for a model provider.")
  )
  .add(
    HttpApiEndpoint.del("deleteModelProvider", "/model-providers/:provider")
      .annotateContext(
        operation({
          summary: "Remove a model provider's settings",
          permission: Policy.configureModelProviders,
          errors: []
        })
      )
      .setPath(ProviderPath)
      .addSuccess(HttpApiSchema.NoContent)
  )
  .addError(BadRequestWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .middleware(Authentication)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Agents and tasks")
  .annotate(
    OpenApi.Description,
    "Agents (a model, instructions, skills, a budget), their invokes and the tasks they make, and the organization's model providers (docs/guides/agents-and-tasks.md)."
  )
{}
