import { Duration, Effect, Option, Schedule, Schema, Stream } from "effect"
import { InvokeAgent, Task } from "../../../schema/Agents.js"
import { AgentId } from "../../../schema/Ids.js"
import type { EventRecord } from "../../events/EventRepo.js"
import { InvokeStream } from "../../events/InvokeStream.js"
import type { McpCaller } from "../../oauth/TokenVerifier.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool, type ToolContext, ToolText } from "../McpTool.js"

const TERMINAL = new Set(["completed", "error", "cancelled"])
// how long one call waits for the answer: a client that sends a progressToken hears from us meanwhile
// and may wait for the whole run; one that does not gets the task to poll before common client timeouts
const WAIT_WITH_PROGRESS_S = 15 * 60
const WAIT_WITHOUT_PROGRESS_S = 50
const POLL_S = 5
// between events, a tick says the task still runs: clients that reset their timeout on progress keep waiting
const TICK = Duration.seconds(10)

/** A progress message per task event (docs/guides/mcp.md, "Progress"). */
const progressMessage = (e: EventRecord): string | undefined => {
  const data = (JSON.parse(e.json) as { data: Record<string, any> }).data
  switch (e.type) {
    case "task.created":
      return `Task ${data["task_id"]} created.`
    case "task.started":
      return "Task started."
    case "task.model_call":
      return `Model call ${data["step"] ?? ""}: ${data["model"] ?? data["provider"]}, ${
        data["input_tokens"] ?? 0
      } in / ${data["output_tokens"] ?? 0} out tokens (${data["finish"]}).`
    case "task.tool_call":
      return `Tool call ${data["step"] ?? ""}: ${data["name"]} (${data["outcome"]}${
        data["status"] === null ? "" : `, HTTP ${data["status"]}`
      }).`
    case "task.waiting_approval":
      return "Waiting for a person to approve a tool call."
    case "approval.requested":
      return `Approval requested for ${data["tool"]}.`
    case "approval.decided":
      return `Approval for ${data["tool"]} ${data["status"]}.`
    case "task.completed":
    case "task.error":
    case "task.cancelled":
      return `Task ${data["status"]}.`
    default:
      return undefined
  }
}

export default defineTool({
  name: "invoke_agent",
  description: "Run an agent with a prompt, as you (POST /v1/agents/{agent_id}/invoke). The run is a task like " +
    "any other, readable with get_task; the result holds the agent's answer and the task id. Long runs send " +
    "progress notifications when the request carries a progressToken; cancelling the call cancels the task; " +
    "`asynchronous: true` returns at once.",
  input: Schema.Struct({
    agent_id: AgentId,
    text: InvokeAgent.fields.input.fields.text,
    asynchronous: Schema.optional(Schema.Boolean).annotations({
      description: "Return at once with the pending task; poll get_task for the answer."
    })
  }),
  output: Task,
  annotations: {
    title: "Invoke an agent",
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: true
  },
  run: ({ agent_id, asynchronous, text }, { caller, cancelled, progress, wantsProgress }) =>
    Effect.gen(function*() {
      const tasks = yield* Tasks
      const { task } = yield* tasks.invoke(
        caller.principal,
        agent_id,
        { input: { text, user: { id: caller.principal.userId!, email: caller.email } } },
        { asynchronous: true, idempotencyKey: undefined, source: "mcp" }
      )
      if (asynchronous === true) return task
      return yield* waitFor(task, caller, wantsProgress, progress).pipe(
        // the client cancelled the call, which is the run: the task stops too (not when this node stops)
        Effect.onInterrupt(() =>
          Effect.flatMap(cancelled, (yes) => yes ? Effect.ignore(tasks.cancel(caller.principal, task.id)) : Effect.void)
        )
      )
    })
})

/** Waits for the task's end (with a progress notification per event when asked), up to its deadline. */
const waitFor = (task: Task, caller: McpCaller, wantsProgress: boolean, progress: ToolContext["progress"]) =>
  Effect.gen(function*() {
    const tasks = yield* Tasks
    const deadline = Date.now() + (wantsProgress ? WAIT_WITH_PROGRESS_S : WAIT_WITHOUT_PROGRESS_S) * 1000
    // one count for all notifications of the call: progress only ever increases
    let n = 0
    if (wantsProgress) {
      // a notification per event of the task as it is committed (the log: EventLog), then the result
      const streams = yield* InvokeStream
      const ticks = Stream.fromSchedule(Schedule.spaced(TICK)).pipe(Stream.as(Option.none<EventRecord>()))
      yield* Stream.merge(
        streams.events(caller.principal.organizationId, task.id).pipe(Stream.map(Option.some)),
        ticks,
        { haltStrategy: "left" }
      ).pipe(
        Stream.runForEach((e) => {
          const text = Option.match(e, { onNone: () => `Task ${task.id} is running.`, onSome: progressMessage })
          return text === undefined ? Effect.void : progress(++n, text)
        }),
        Effect.timeout(Duration.millis(Math.max(0, deadline - Date.now()))),
        // the log cannot say (pruned under the stream, or too long): the task is read as it is now
        Effect.ignore
      )
    }
    let current = wantsProgress ? yield* tasks.get(caller.principal, task.id, 0) : task
    while (!TERMINAL.has(current.status) && Date.now() < deadline) {
      current = yield* tasks.get(caller.principal, task.id, Math.min(POLL_S, (deadline - Date.now()) / 1000))
      if (!TERMINAL.has(current.status)) yield* progress(++n, `Task ${task.id} is ${current.status}.`)
    }
    const answer = TERMINAL.has(current.status)
      ? current.result ?? ""
      : `The task is still ${current.status}; read it later with get_task.`
    return new ToolText(`${answer}\n\ntask_id: ${current.id} (status: ${current.status})`, current)
  })
