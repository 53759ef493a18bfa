import { Args, Command, Options } from "@effect/cli"
import { Effect, Option } from "effect"
import { Task, TaskPage, TaskStatus, Thread, type ThreadEvent } from "../../schema/Agents.js"
import { AgentsApi } from "../../schema/AgentsApi.js"
import { AgentId, TaskId } from "../../schema/Ids.js"
import { apiOptions, resolveTarget, withClient } from "./ApiTarget.js"
import { groupCommand } from "./Help.js"
import { fields, optional, print, reportFailure, table, validated } from "./Output.js"
import { inRange, nextPageLine, pageOptions, paramRange } from "./ParamRange.js"
import { bold, dim, sanitize } from "./Terminal.js"

const when = (date: Date | null) => date === null ? null : date.toISOString().replace("T", " ").replace("Z", "")

const taskId = Args.text({ name: "TASK_ID" }).pipe(
  Args.withDescription("The task (its id, as invoke and tasks list print it).")
)

const waitRange = paramRange(AgentsApi.endpoints.getTask, "wait")

const get = Command.make(
  "get",
  {
    ...apiOptions,
    id: taskId,
    wait: Options.integer("wait").pipe(
      Options.withPseudoName("SECONDS"),
      Options.withDescription(`Wait up to this many seconds (${waitRange.min}-${waitRange.max}) for the task to end.`),
      Options.optional
    )
  },
  (options) =>
    Effect.gen(function*() {
      const wait = yield* Effect.transposeMapOption(options.wait, inRange("--wait", waitRange))
      const target = yield* resolveTarget(options)
      const task_id = yield* validated(TaskId, options.id, "TASK_ID")
      const task = yield* withClient(target, (client) =>
        client.agents.getTask({
          path: { task_id },
          urlParams: Option.match(wait, { onNone: () => ({}), onSome: (wait) => ({ wait }) })
        }))
      yield* print(options.json, Task, task, (task, colour) =>
        fields(colour, [
          ["id", task.id],
          ["agent", task.agent_id],
          ["status", task.status],
          ...(task.error_code === null ? [] : [["error", task.error_code] as const]),
          ["source", task.source],
          ["user", task.user.email],
          ["created", when(task.created_at)],
          ["finished", when(task.finished_at)]
        ]) + (task.result === null ? "" : `\n${sanitize(task.result)}\n`))
    }).pipe(reportFailure(options.json))
).pipe(Command.withDescription("Show a task (GET /v1/tasks/{id}): its status and, once it ended, its answer or error."))

const limitRange = paramRange(AgentsApi.endpoints.listTasks, "limit")

const list = Command.make(
  "list",
  {
    ...apiOptions,
    agent: Options.text("agent").pipe(
      Options.withPseudoName("AGENT_ID"),
      Options.withDescription("Only this agent's tasks."),
      Options.optional
    ),
    status: Options.choice("status", TaskStatus.literals).pipe(
      Options.withDescription("Only tasks in this status."),
      Options.optional
    ),
    ...pageOptions(limitRange)
  },
  (options) =>
    Effect.gen(function*() {
      const limit = yield* inRange("--limit", limitRange)(options.limit)
      const agent = yield* Effect.transposeMapOption(options.agent, (id) => validated(AgentId, id, "--agent"))
      const target = yield* resolveTarget(options)
      const page = yield* withClient(target, (client) =>
        client.agents.listTasks({
          urlParams: {
            limit,
            ...optional("agent_id", agent),
            ...optional("status", options.status),
            ...optional("cursor", options.cursor)
          }
        }))
      yield* print(options.json, TaskPage, page, (page, colour) =>
        table(
          colour,
          ["ID", "AGENT", "STATUS", "SOURCE", "USER", "CREATED"],
          page.items.map((t) => [t.id, t.agent_id, t.status, t.source, t.user.email, when(t.created_at)])
        ) + nextPageLine(page.next_cursor))
    }).pipe(reportFailure(options.json))
).pipe(Command.withDescription("List tasks, newest first (GET /v1/tasks)."))

const cancel = Command.make("cancel", { ...apiOptions, id: taskId }, (options) =>
  Effect.gen(function*() {
    const target = yield* resolveTarget(options)
    const task_id = yield* validated(TaskId, options.id, "TASK_ID")
    const task = yield* withClient(target, (client) => client.agents.cancelTask({ path: { task_id } }))
    yield* print(options.json, Task, task, (task) => `task ${task.id} ${task.status}\n`)
  }).pipe(reportFailure(options.json))).pipe(
    Command.withDescription(
      "Cancel a task that has not ended (POST /v1/tasks/{id}/cancel: Builders and above any task, a Member their " +
        "own): its model and tool calls stop. One that ended already is refused (task_ended)."
    )
  )

const str = (v: unknown) => (v === undefined || v === null ? "" : String(v))

/** Who decided: the audit log's actor (`{type, id, key_id}`) as its kind and id, e.g. `user 9bec…`. */
const actor = (v: any) =>
  typeof v === "object" && v !== null
    ? [v.type === "api_key" ? "API key" : str(v.type), str(v.id)].filter((s) => s !== "").join(" ")
    : str(v)

/** One line per event of the thread: what happened at each step. */
const summary = (event: ThreadEvent): string => {
  const d: any = event.data ?? {}
  switch (event.type) {
    case "user_message":
    case "agent_message":
      return str(d.text)
    case "model_call":
      return `${str(d.provider)} ${str(d.model)}: ${str(d.input_tokens)} in, ${str(d.output_tokens)} out, ` +
        `$${Number(d.cost_usd ?? 0).toFixed(6)}, ${str(d.duration_ms)} ms` +
        (Array.isArray(d.tool_calls) && d.tool_calls.length > 0
          ? `, calls ${d.tool_calls.map((c: any) => str(c?.name)).join(", ")}`
          : "")
    case "tool_call":
      return `${str(d.name)} ${str(d.outcome)}${
        d.status === undefined || d.status === null ? "" : ` HTTP ${d.status}`
      }` +
        `, ${str(d.duration_ms)} ms`
    case "approval_requested":
      return `${str(d.name)} waits for approval ${str(d.approval_id)}`
    case "approval_decided":
      return `${str(d.status)}${d.by ? ` by ${actor(d.by)}` : ""}${d.reason ? `: ${str(d.reason)}` : ""}`
    case "command_check":
      return `${str(d.decision)} ${str(d.command)}${d.rule ? ` (rule ${str(d.rule)})` : ""}${
        d.reason ? `: ${str(d.reason)}` : ""
      }`
    default:
      return str(d.message)
  }
}

const thread = Command.make("thread", { ...apiOptions, id: taskId }, (options) =>
  Effect.gen(function*() {
    const target = yield* resolveTarget(options)
    const task_id = yield* validated(TaskId, options.id, "TASK_ID")
    const thread = yield* withClient(target, (client) => client.agents.getThread({ path: { task_id } }))
    yield* print(options.json, Thread, thread, (thread, colour) =>
      thread.events.map((e) =>
        `${dim(colour, `#${e.seq} ${e.at.toISOString().slice(11, 23)}`)} ${bold(colour, e.type.padEnd(18))} ` +
        sanitize(summary(e)).trimEnd().replace(/\n/g, "\n    ")
      ).join("\n") + "\n")
  }).pipe(reportFailure(options.json))).pipe(
    Command.withDescription(
      "Show a task's thread (GET /v1/tasks/{id}/thread): the prompt, each model and tool call, the answer."
    )
  )

export const tasksCommand = groupCommand("tasks", "Tasks: list, get one, read its thread, cancel.", [
  list,
  get,
  thread,
  cancel
])
