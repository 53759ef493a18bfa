import {
  agentId,
  at,
  connectionId,
  created,
  digestTaskId,
  list,
  now,
  ok,
  type OperationExample,
  page,
  refundTaskId,
  scheduleId,
  user
} from "./Story.js"

const taskId = "5f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f"
const model = { provider: "openai", name: "gpt-4.1-mini" }

export const agent = {
  id: agentId,
  name: "Support triage",
  instructions: "Answer from the order system; never promise refunds.",
  model,
  skills: [{ connection_id: connectionId, operation_ids: ["getOrder"] }],
  budget: { limit_usd: 50, period: "month" },
  spent_usd: 0,
  max_steps: 10,
  max_tokens: null,
  timeout_seconds: null,
  version: 1,
  created_at: at(12, "09:00:00"),
  updated_at: at(12, "09:00:00")
}
export const updatedAgent = { ...agent, max_steps: 15, spent_usd: 1.84, version: 2, updated_at: at(15, "09:45:00") }

const task = (status: string, result: string | null, finished: string | null, id = taskId, created = now) => ({
  id,
  agent_id: agentId,
  agent_version: 1,
  status,
  result,
  source: "api",
  user,
  created_at: created,
  finished_at: finished
})
const orderAnswer = "Order 1234 shipped on January 14."
const digestTask = {
  ...task("completed", "3 tickets are open; the oldest waits since Monday.", at(15, "07:00:09"), digestTaskId),
  source: "schedule",
  schedule_id: scheduleId,
  created_at: at(15, "07:00:00")
}
const refundTask = task("waiting_approval", null, null, refundTaskId, at(15, "09:12:00"))

export const agentAndTaskExamples: Record<string, OperationExample> = {
  createAgent: {
    request: {
      name: agent.name,
      instructions: agent.instructions,
      model,
      skills: agent.skills,
      budget: agent.budget
    },
    response: created(agent)
  },
  listAgents: { response: ok(list(updatedAgent)) },
  getAgent: { response: ok(updatedAgent) },
  updateAgent: { request: { max_steps: 15 }, response: ok(updatedAgent) },
  invokeAgent: {
    request: { input: { text: "Where is order 1234?", user } },
    response: ok(task("completed", orderAnswer, at(15, "09:30:04")))
  },
  listTasks: { response: ok(page(task("completed", orderAnswer, at(15, "09:30:04")), refundTask, digestTask)) },
  getTask: { response: ok(task("executing", null, null)) },
  cancelTask: { response: ok({ ...refundTask, status: "cancelled", finished_at: at(15, "09:31:00") }) },
  getThread: {
    response: ok({
      task_id: taskId,
      events: [
        { seq: 1, type: "user_message", at: now, user, data: { text: "Where is order 1234?" } },
        {
          seq: 2,
          type: "tool_call",
          at: at(15, "09:30:02"),
          user,
          data: {
            step: 1,
            name: "getOrder",
            connection_id: connectionId,
            operation_id: "getOrder",
            arguments: { path_params: { id: "1234" } },
            status: 200,
            outcome: "ok",
            result: "{\"id\":\"1234\",\"status\":\"shipped\"}",
            duration_ms: 84
          }
        },
        { seq: 3, type: "agent_message", at: at(15, "09:30:04"), user, data: { text: orderAnswer } }
      ]
    })
  }
}
