import { Effect, Schema } from "effect"
import { InvokeAgent, Task } from "../../../schema/Agents.js"
import { AgentId } from "../../../schema/Ids.js"
import { Tasks } from "../../tasks/Tasks.js"
import { defineTool, ToolText } from "../McpTool.js"

const TERMINAL = new Set(["completed", "error", "cancelled"])
// how long one call waits for the answer: a client that sends a progressToken hears from us meanwhile
// and may wait for the whole run; one that does not gets the task to poll before common client timeouts
const WAIT_WITH_PROGRESS_S = 15 * 60
const WAIT_WITHOUT_PROGRESS_S = 50
const POLL_S = 5

export default defineTool({
  name: "invoke_agent",
  description: "Run an agent with a prompt, as you (POST /v1/agents/{agent_id}/invoke). The run is a task like " +
    "any other, readable with get_task; the result holds the agent's answer and the task id. Long runs send " +
    "progress notifications when the request carries a progressToken; `asynchronous: true` returns at once.",
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
  run: ({ agent_id, asynchronous, text }, { caller, progress, wantsProgress }) =>
    Effect.gen(function*() {
      const tasks = yield* Tasks
      const { task } = yield* tasks.invoke(
        caller.principal,
        agent_id,
        { input: { text, user: { id: caller.principal.userId!, email: caller.email } } },
        { asynchronous: true, idempotencyKey: undefined, source: "mcp" }
      )
      if (asynchronous === true) return task
      const deadline = Date.now() + (wantsProgress ? WAIT_WITH_PROGRESS_S : WAIT_WITHOUT_PROGRESS_S) * 1000
      let current = task
      let ticks = 0
      while (!TERMINAL.has(current.status) && Date.now() < deadline) {
        current = yield* tasks.get(caller.principal, task.id, Math.min(POLL_S, (deadline - Date.now()) / 1000))
        if (!TERMINAL.has(current.status)) yield* progress(++ticks, `Task ${task.id} is ${current.status}.`)
      }
      const answer = TERMINAL.has(current.status)
        ? current.result ?? ""
        : `The task is still ${current.status}; read it later with get_task.`
      return new ToolText(`${answer}\n\ntask_id: ${current.id} (status: ${current.status})`, current)
    })
})
